// equarx codec — SIMD kernels of the raw wire formats (f32, bf16, f16, e5m2) and of Convert.
//
// Highway foreach_target translation unit: everything between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is compiled once per SIMD target; the HWY_ONCE part at the bottom holds
// the dispatch tables and the entry points that dispatch.cc calls.
//
// Conversions are done with integer arithmetic on bit patterns (plus two exact f32 adds for
// subnormals), never with the target's own f16 instructions or Highway's emulations, so every
// target rounds exactly like the scalar reference (reference.cc):
//   f32 -> bf16  (b + 0x7FFF + lsb) >> 16, NaN -> 0x7FC0
//   f32 -> f16   normal: rebias the exponent, round the 13 dropped bits to nearest even with
//                the same add-and-shift; subnormal: |x| + 0.5f rounds at 2^-24 (the f16
//                subnormal unit) in hardware RNE, the code is bits(sum) - bits(0.5f);
//                >= 2^16 -> Inf, NaN -> 0x7E00
//   f32 -> e5m2  the same with 21 dropped bits and magic 128.0f (unit 2^-16), saturating to
//                0x7B; Inf -> 0x7C, NaN -> 0x7F
//   f16 -> f32   rebias (exact), subnormals m * 2^-24 (exact); e5m2 -> f32 via f16 (b << 8).
// Element tails shorter than a vector use the scalar reference conversions. NaN sums are
// stored as the canonical 0x7FC00000, as in the reference.
#include <cstring>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/raw.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/convert_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using D8 = hn::Rebind<uint8_t, DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;

// ---- Vector conversions ----------------------------------------------------------------

using cvt::F16BitsToF32;  // convert_simd-inl.h, as is the one below
using cvt::F32ToE5M2Bits;

// ---- Typed vector load / store of one vector at element index i ----------------------------

enum class Kind { kF32, kBF16, kF16, kE5M2 };

// The dtype of a kind other than e5m2.
constexpr DType DTypeOf(Kind k) {
  return k == Kind::kF32 ? DType::kFloat32 : k == Kind::kBF16 ? DType::kBFloat16 : DType::kFloat16;
}

template <Kind K>
HWY_INLINE VF LoadAs(const void* p, size_t i) {
  if constexpr (K == Kind::kE5M2) {
    const VU b = hn::PromoteTo(DU(), hn::LoadU(D8(), static_cast<const uint8_t*>(p) + i));
    return F16BitsToF32(hn::ShiftLeft<8>(b));
  } else {
    return cvt::LoadF<DTypeOf(K)>(p, i);
  }
}

template <Kind K>
HWY_INLINE void StoreAs(VF v, void* p, size_t i) {
  if constexpr (K == Kind::kE5M2) {
    hn::StoreU(hn::DemoteTo(D8(), hn::BitCast(DI(), F32ToE5M2Bits(v))), D8(), static_cast<uint8_t*>(p) + i);
  } else {
    cvt::StoreF<DTypeOf(K)>(v, p, i);
  }
}

// Scalar versions (the reference conversions) for the tails. Wire buffers need no alignment
// (codec.h), so elements are copied with memcpy, never read through a typed pointer (a
// misaligned float or uint16_t load is undefined behaviour; UBSan found one on a raw wire).
template <typename T>
T LoadAt(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void StoreAt(T v, void* p, size_t i) {
  std::memcpy(static_cast<uint8_t*>(p) + i * sizeof(T), &v, sizeof(T));
}

template <Kind K>
float LoadOne(const void* p, size_t i) {
  if constexpr (K == Kind::kF32) return LoadAt<float>(p, i);
  if constexpr (K == Kind::kBF16) return ref::BF16ToF32(LoadAt<uint16_t>(p, i));
  if constexpr (K == Kind::kF16) return ref::F16ToF32(LoadAt<uint16_t>(p, i));
  return ref::E5M2ToF32(static_cast<const uint8_t*>(p)[i]);
}

template <Kind K>
void StoreOne(float x, void* p, size_t i) {
  if constexpr (K == Kind::kF32) StoreAt<float>(x, p, i);
  if constexpr (K == Kind::kBF16) StoreAt<uint16_t>(ref::F32ToBF16(x), p, i);
  if constexpr (K == Kind::kF16) StoreAt<uint16_t>(ref::F32ToF16(x), p, i);
  if constexpr (K == Kind::kE5M2) static_cast<uint8_t*>(p)[i] = ref::F32ToE5M2(x);
}

float CanonicalNaN() {
  const uint32_t bits = 0x7FC00000u;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// dst[i] = convert(src[i]), or with `add` given: dst[i] = convert(add[i] + src[i]).
template <Kind KS, Kind KD, Kind KA, bool kAdd>
void Loop(const void* src, const void* add, size_t n, void* dst) {
  const size_t N = hn::Lanes(DF());
  size_t i = 0;
  for (; i + N <= n; i += N) {
    VF v = LoadAs<KS>(src, i);
    if constexpr (kAdd) {
      v = hn::Add(LoadAs<KA>(add, i), v);
      v = hn::IfThenElse(hn::IsNaN(v), hn::BitCast(DF(), hn::Set(DU(), 0x7FC00000u)), v);
    }
    StoreAs<KD>(v, dst, i);
  }
  for (; i < n; ++i) {
    float x = LoadOne<KS>(src, i);
    if constexpr (kAdd) {
      x = LoadOne<KA>(add, i) + x;
      if (x != x) x = CanonicalNaN();
    }
    StoreOne<KD>(x, dst, i);
  }
}

Kind KindOf(DType t) {
  return t == DType::kFloat32 ? Kind::kF32 : t == DType::kBFloat16 ? Kind::kBF16 : Kind::kF16;
}
Kind KindOf(Format f) {
  switch (f) {
    case Format::kRawBF16: return Kind::kBF16;
    case Format::kRawF16: return Kind::kF16;
    case Format::kRawE5M2: return Kind::kE5M2;
    default: return Kind::kF32;
  }
}

template <Kind KS, Kind KD, Kind KA, bool kAdd>
void LoopA(Kind ka, const void* src, const void* add, size_t n, void* dst) {
  switch (ka) {
    case Kind::kF32: return Loop<KS, KD, Kind::kF32, kAdd>(src, add, n, dst);
    case Kind::kBF16: return Loop<KS, KD, Kind::kBF16, kAdd>(src, add, n, dst);
    case Kind::kF16: return Loop<KS, KD, Kind::kF16, kAdd>(src, add, n, dst);
    case Kind::kE5M2: break;  // never an accumulator type
  }
}

template <Kind KS, bool kAdd>
void LoopD(Kind kd, Kind ka, const void* src, const void* add, size_t n, void* dst) {
  switch (kd) {
    case Kind::kF32: return LoopA<KS, Kind::kF32, Kind::kF32, kAdd>(ka, src, add, n, dst);
    case Kind::kBF16: return LoopA<KS, Kind::kBF16, Kind::kF32, kAdd>(ka, src, add, n, dst);
    case Kind::kF16: return LoopA<KS, Kind::kF16, Kind::kF32, kAdd>(ka, src, add, n, dst);
    case Kind::kE5M2: return LoopA<KS, Kind::kE5M2, Kind::kF32, kAdd>(ka, src, add, n, dst);
  }
}

// The one generic kernel: dst = convert_kd([add (as ka)] + src (as ks)).
template <bool kAdd>
void Run(Kind ks, Kind kd, Kind ka, const void* src, const void* add, size_t n, void* dst) {
  switch (ks) {
    case Kind::kF32: return LoopD<Kind::kF32, kAdd>(kd, ka, src, add, n, dst);
    case Kind::kBF16: return LoopD<Kind::kBF16, kAdd>(kd, ka, src, add, n, dst);
    case Kind::kF16: return LoopD<Kind::kF16, kAdd>(kd, ka, src, add, n, dst);
    case Kind::kE5M2: return LoopD<Kind::kE5M2, kAdd>(kd, ka, src, add, n, dst);
  }
}

// ---- Kernels (dispatched) ----------------------------------------------------------------

void RawEncodeImpl(Format f, DType src_type, const void* src, size_t n, uint8_t* wire) {
  Run<false>(KindOf(src_type), KindOf(f), Kind::kF32, src, nullptr, n, wire);
}

void RawDecodeImpl(Format f, const uint8_t* wire, size_t n, DType dst_type, void* dst) {
  Run<false>(KindOf(f), KindOf(dst_type), Kind::kF32, wire, nullptr, n, dst);
}

void RawDecodeAccumulateImpl(Format f, const uint8_t* wire, size_t n, DType local_type,
                             const void* local, float* out) {
  Run<true>(KindOf(f), Kind::kF32, KindOf(local_type), wire, local, n, out);
}

void RawDecodeAccumulateEncodeImpl(Format f, const uint8_t* wire_in, size_t n,
                                   DType local_type, const void* local, uint8_t* wire_out) {
  Run<true>(KindOf(f), KindOf(f), KindOf(local_type), wire_in, local, n, wire_out);
}

void ConvertImpl(DType src_type, const void* src, size_t n, DType dst_type, void* dst) {
  Run<false>(KindOf(src_type), KindOf(dst_type), Kind::kF32, src, nullptr, n, dst);
}

// Per-target array conversions for int8_block.cc (same target, called directly).
void CvtF32ToBF16(const float* in, size_t n, uint16_t* out) {
  Loop<Kind::kF32, Kind::kBF16, Kind::kF32, false>(in, nullptr, n, out);
}
void CvtF32ToF16(const float* in, size_t n, uint16_t* out) {
  Loop<Kind::kF32, Kind::kF16, Kind::kF32, false>(in, nullptr, n, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

HWY_EXPORT(RawEncodeImpl);
HWY_EXPORT(RawDecodeImpl);
HWY_EXPORT(RawDecodeAccumulateImpl);
HWY_EXPORT(RawDecodeAccumulateEncodeImpl);
HWY_EXPORT(ConvertImpl);

namespace internal {
// Entry points for dispatch.cc. Identity conversions are bit copies (done there).
void RawEncode(Format f, DType src_type, const void* src, size_t n, uint8_t* wire) {
  HWY_DYNAMIC_DISPATCH(RawEncodeImpl)(f, src_type, src, n, wire);
}
void RawDecode(Format f, const uint8_t* wire, size_t n, DType dst_type, void* dst) {
  HWY_DYNAMIC_DISPATCH(RawDecodeImpl)(f, wire, n, dst_type, dst);
}
void RawDecodeAccumulate(Format f, const uint8_t* wire, size_t n, DType local_type,
                         const void* local, float* out) {
  HWY_DYNAMIC_DISPATCH(RawDecodeAccumulateImpl)(f, wire, n, local_type, local, out);
}
void RawDecodeAccumulateEncode(Format f, const uint8_t* wire_in, size_t n, DType local_type,
                               const void* local, uint8_t* wire_out) {
  HWY_DYNAMIC_DISPATCH(RawDecodeAccumulateEncodeImpl)(f, wire_in, n, local_type, local,
                                                      wire_out);
}
void ConvertDtypes(DType src_type, const void* src, size_t n, DType dst_type, void* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertImpl)(src_type, src, n, dst_type, dst);
}
}  // namespace internal

}  // namespace equarx::codec
#endif  // HWY_ONCE
