// Fuzz harness: every codec's Decode, DecodeAccumulate and DecodeAccumulateEncode on arbitrary
// wire bytes (what a corrupt or hostile peer could put on the wire), on every SIMD target this
// CPU and build have, against the scalar reference.
//
// Input: [format u8][block u16][dst/local dtype u8][flags u8][seed u64][count u16][wire...].
// The count is cut to what the wire bytes hold. Invariants, beyond "no crash, no sanitizer
// report": every target's output is bitwise equal to the reference's (the determinism contract
// of src/codec/codec.h, which rank agreement rests on), telemetry included.
#include <cstdint>
#include <vector>

#include "codec/codec.h"
#include "equarx/options.h"
#include "fuzz_input.h"

namespace equarx::codec {
namespace {

// Local values: a deterministic mix of normals, large and tiny magnitudes and non-finites.
void MakeLocal(uint64_t seed, DType t, size_t n, std::vector<uint8_t>* out) {
  std::vector<float> f(n);
  uint64_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = (s ^ (s >> 30)) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    uint32_t bits = uint32_t(z);
    switch (z >> 60) {
      case 0: bits = 0x7F800000u; break;         // +Inf
      case 1: bits = 0x7FC00000u | (bits & 7); break;  // NaN with a payload
      case 2: bits &= 0x807FFFFFu; break;        // subnormal or zero
      default: bits = (bits & 0x80000000u) | ((0x70u + (bits >> 24) % 32) << 23) | (bits & 0x7FFFFFu);
    }
    std::memcpy(&f[i], &bits, 4);
  }
  out->resize(n * DTypeSize(t));
  ref::Convert(DType::kFloat32, f.data(), n, t, out->data());
}

bool SameStats(const EncodeStats& a, const EncodeStats& b) {
  return a.clipped == b.clipped && a.values == b.values &&
         std::memcmp(&a.sum_sq_err_est, &b.sum_sq_err_est, sizeof(double)) == 0 &&
         std::memcmp(&a.max_abs_err_est, &b.max_abs_err_est, sizeof(float)) == 0 &&
         std::memcmp(&a.sum_sq_values, &b.sum_sq_values, sizeof(double)) == 0;
}

}  // namespace
}  // namespace equarx::codec

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace equarx;
  using namespace equarx::codec;
  fuzz::Input in(data, size);
  WireSpec spec;
  spec.format = Format(in.Take<uint8_t>() % (size_t(Format::kRawE5M2) + 1 + std::size(kBlockFormats)));
  spec.block = uint32_t(kMinBlock + in.Take<uint16_t>() % (kMaxBlock - kMinBlock + 1));  // options.h
  const DType dtype = DType(in.Take<uint8_t>() % 3);
  const uint8_t flags = in.Take<uint8_t>();
  spec.scale = flags & 1 ? kScaleBF16 : kScaleF32;
  // Stochastic rounding exists for the integer codes only (codec.h); the others ignore the field.
  spec.rounding = flags & 2 ? kRoundStochastic : kRoundNearestEven;
  spec.seed = in.Take<uint64_t>();
  spec.stream = flags >> 4;
  spec.offset = flags & 4 ? 0 : uint64_t(spec.block) * (spec.seed & 0xFFFF);
  size_t n = in.Take<uint16_t>();
  const size_t avail = in.remaining();
  // The largest count <= n whose wire image fits the bytes left.
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    if (WireBytes(spec, mid) <= avail) lo = mid; else hi = mid - 1;
  }
  n = lo;
  const uint8_t* wire = in.rest();
  std::vector<uint8_t> local;
  MakeLocal(spec.seed, dtype, n, &local);
  const size_t out_bytes = n * DTypeSize(dtype), wire_bytes = WireBytes(spec, n);

  std::vector<uint8_t> dec_ref(out_bytes), wire_ref(wire_bytes);
  std::vector<float> acc_ref(n);
  EncodeStats st_ref;
  ref::Decode(spec, wire, n, dtype, dec_ref.data());
  ref::DecodeAccumulate(spec, wire, n, dtype, local.data(), acc_ref.data());
  ref::DecodeAccumulateEncode(spec, wire, n, dtype, local.data(), wire_ref.data(), &st_ref);

  for (int64_t target : AvailableTargets()) {
    ForceTarget(target);
    std::vector<uint8_t> dec(out_bytes), w(wire_bytes);
    std::vector<float> acc(n);
    EncodeStats st;
    Decode(spec, wire, n, dtype, dec.data());
    DecodeAccumulate(spec, wire, n, dtype, local.data(), acc.data());
    DecodeAccumulateEncode(spec, wire, n, dtype, local.data(), w.data(), &st);
    if (dec != dec_ref) fuzz::Fail("Decode differs from the reference");
    if (n && std::memcmp(acc.data(), acc_ref.data(), n * 4) != 0)
      fuzz::Fail("DecodeAccumulate differs from the reference");
    if (w != wire_ref) fuzz::Fail("DecodeAccumulateEncode differs from the reference");
    if (!SameStats(st, st_ref)) fuzz::Fail("DecodeAccumulateEncode telemetry differs from the reference");
  }
  ForceTarget(0);
  return 0;
}
