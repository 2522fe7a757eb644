// equarx codec — public kernel entry points and SIMD target control.
//
// Each entry point picks the format's row of the kernel table (internal::BlockKernelsOf:
// int8_block.cc, int4_block.cc, packed_block.cc for int6/int5, fp8_block.cc for e4m3/e5m2) or
// raw.cc; each is a Highway foreach_target unit with its own dispatch tables. Identity
// conversions (a raw wire of the caller's own dtype) are plain bit copies, as in the reference.
//
// Target control: Highway 1.0.3 chooses the target from hwy::SupportedTargets(), which
// hwy::SetSupportedTargetsForTest can mock. ForceTarget sets that mock and re-runs the
// chosen-target update so every HWY_DYNAMIC_DISPATCH table (in both kernel units) uses the
// forced target; ForceTarget(0) drops the mock. Not meant to be called while kernels run on
// other threads.
#include <cstring>
#include <mutex>

#include "codec/codec.h"
#include "codec/internal.h"
#include "hwy/targets.h"

namespace equarx::codec {


void Encode(WireSpec spec, DType src_type, const void* src, size_t n, uint8_t* wire) {
  codec::Encode(spec, src_type, src, n, wire, nullptr);
}

void Encode(WireSpec spec, DType src_type, const void* src, size_t n, uint8_t* wire,
            EncodeStats* stats) {
  if (n == 0) return;
  if (const internal::BlockKernels* k = internal::BlockKernelsOf(spec.format)) {
    k->encode(spec, src_type, src, n, wire, stats);
  } else if (spec.format == RawFormatOf(src_type)) {
    std::memcpy(wire, src, n * DTypeSize(src_type));
  } else {
    internal::RawEncode(spec.format, src_type, src, n, wire);
  }
}

void Decode(WireSpec spec, const uint8_t* wire, size_t n, DType dst_type, void* dst) {
  if (n == 0) return;
  if (const internal::BlockKernels* k = internal::BlockKernelsOf(spec.format)) {
    k->decode(spec, wire, n, dst_type, dst);
  } else if (spec.format == RawFormatOf(dst_type)) {
    std::memcpy(dst, wire, n * DTypeSize(dst_type));
  } else {
    internal::RawDecode(spec.format, wire, n, dst_type, dst);
  }
}

void DecodeAccumulate(WireSpec spec, const uint8_t* wire, size_t n, DType local_type,
                      const void* local, float* out_f32) {
  if (n == 0) return;
  if (const internal::BlockKernels* k = internal::BlockKernelsOf(spec.format)) {
    k->decode_accumulate(spec, wire, n, local_type, local, out_f32);
  } else {
    internal::RawDecodeAccumulate(spec.format, wire, n, local_type, local, out_f32);
  }
}

void DecodeAccumulateEncode(WireSpec spec, const uint8_t* wire_in, size_t n, DType local_type,
                            const void* local, uint8_t* wire_out) {
  codec::DecodeAccumulateEncode(spec, wire_in, n, local_type, local, wire_out, nullptr);
}

void DecodeAccumulateEncode(WireSpec spec, const uint8_t* wire_in, size_t n, DType local_type,
                            const void* local, uint8_t* wire_out, EncodeStats* stats) {
  if (n == 0) return;
  if (const internal::BlockKernels* k = internal::BlockKernelsOf(spec.format)) {
    k->decode_accumulate_encode(spec, wire_in, n, local_type, local, wire_out, stats);
  } else {
    internal::RawDecodeAccumulateEncode(spec.format, wire_in, n, local_type, local, wire_out);
  }
}

void Convert(DType src_type, const void* src, size_t n, DType dst_type, void* dst) {
  if (n == 0) return;
  if (src_type == dst_type) {
    std::memmove(dst, src, n * DTypeSize(src_type));
  } else {
    internal::ConvertDtypes(src_type, src, n, dst_type, dst);
  }
}

void AccumulateLoss(DType got_type, const void* got, const float* exact, size_t n,
                    float* residual) {
  if (got_type != DType::kFloat32) return ref::AccumulateLoss(got_type, got, exact, n, residual);
  // The f32 case in a form the compiler vectorises (elementwise: the same bits as the loop
  // of the reference on every target).
  const float* g = static_cast<const float*>(got);
  for (size_t i = 0; i < n; ++i) {
    const float d = exact[i] - g[i];
    residual[i] += (d - d == 0.0f) ? d : 0.0f;  // d - d is 0 for finite d, NaN otherwise
  }
}

// ---- SIMD targets -----------------------------------------------------------------------

namespace {

std::mutex g_target_mutex;

// The real (unmocked) list, captured before this module ever mocks the supported targets.
const std::vector<int64_t>& RealTargets() {
  static const std::vector<int64_t> targets = [] {
    std::vector<int64_t> t = hwy::SupportedAndGeneratedTargets();  // ascending bit = best first
    return t;
  }();
  return targets;
}

}  // namespace

std::vector<int64_t> AvailableTargets() { return RealTargets(); }

std::string TargetName(int64_t target) { return hwy::TargetName(target); }

int64_t CurrentTarget() { return internal::DispatchedTarget(); }

void ForceTarget(int64_t target) {
  const std::vector<int64_t>& real = RealTargets();
  std::lock_guard<std::mutex> lock(g_target_mutex);
  bool known = target == 0;
  for (int64_t t : real) known = known || t == target;
  if (!known) return;  // not compiled or not supported by this CPU: keep the current choice
  hwy::SetSupportedTargetsForTest(target);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

}  // namespace equarx::codec
