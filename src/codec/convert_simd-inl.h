// equarx codec — vector dtype conversions, and the typed vector loads and stores built on them,
// shared by raw.cc, the block formats and the rotation (per-target header, included inside a
// foreach_target unit). Integer arithmetic on bit patterns plus exact f32 products, so every
// target gives the reference's bits.
#if defined(EQUARX_CODEC_CONVERT_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef EQUARX_CODEC_CONVERT_SIMD_INL_H_
#undef EQUARX_CODEC_CONVERT_SIMD_INL_H_
#else
#define EQUARX_CODEC_CONVERT_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "equarx/types.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace cvt {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;

// f16 bits (in u32 lanes) -> f32, exact: normal and special values by rebiasing the exponent,
// subnormals as m * 2^-24.
HWY_INLINE hn::Vec<DF> F16BitsToF32(hn::Vec<DU> h) {
  const DF df;
  const DI di;
  const DU du;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto em = hn::And(h, hn::Set(du, 0x7FFFu));
  const auto emi = hn::BitCast(di, em);
  const auto normal = hn::Add(hn::ShiftLeft<13>(em), hn::Set(du, (127u - 15u) << 23));
  const auto special = hn::Add(hn::ShiftLeft<13>(em), hn::Set(du, (255u - 31u) << 23));
  const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, emi), hn::Set(df, 0x1p-24f)));
  auto mag = hn::IfThenElse(hn::RebindMask(du, emi < hn::Set(di, 0x400)), sub, normal);
  mag = hn::IfThenElse(hn::RebindMask(du, emi > hn::Set(di, 0x7BFF)), special, mag);
  return hn::BitCast(df, hn::Or(mag, sign));
}

HWY_INLINE hn::Vec<DU> F32ToBF16Bits(hn::Vec<DF> f) {
  const DI di;
  const DU du;
  const auto b = hn::BitCast(du, f);
  const auto abs = hn::BitCast(di, hn::And(b, hn::Set(du, 0x7FFFFFFFu)));
  const auto lsb = hn::And(hn::ShiftRight<16>(b), hn::Set(du, 1u));
  const auto r = hn::ShiftRight<16>(hn::Add(hn::Add(b, hn::Set(du, 0x7FFFu)), lsb));
  return hn::IfThenElse(hn::RebindMask(du, (abs > hn::Set(di, 0x7F800000))),
                        hn::Set(du, 0x7FC0u), r);
}

// f32 -> float with 5 exponent bits and kM mantissa bits (f16: 10, e5m2: 2), magnitude only,
// finite inputs with |x| < 2^16 (callers select the overflow/NaN codes themselves).
template <int kM>
HWY_INLINE hn::Vec<DU> RoundToE5Finite(hn::Vec<DU> abs) {
  const DF df;
  const DI di;
  const DU du;
  constexpr int kDrop = 23 - kM;
  const auto odd = hn::And(hn::ShiftRight<kDrop>(abs), hn::Set(du, 1u));
  const auto bias = hn::Set(du, uint32_t(int32_t(15 - 127) * (1 << 23)) + ((1u << (kDrop - 1)) - 1));
  const auto normal = hn::ShiftRight<kDrop>(hn::Add(hn::Add(abs, bias), odd));
  const auto magic = hn::BitCast(df, hn::Set(du, uint32_t((127 - 15) + kDrop + 1) << 23));
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), magic)),
                           hn::BitCast(du, magic));
  return hn::IfThenElse(
      hn::RebindMask(du, (hn::BitCast(di, abs) < hn::Set(di, int32_t(113u << 23)))), sub,
      normal);
}

// f32 -> the bits of a float with 5 exponent bits and kM mantissa bits: f16 (kM = 10) or
// e5m2 (kM = 2), sign at bit 5 + kM. Huge finite values are clamped below 2^16 first so the
// normal path cannot wrap; then f16 overflows to Inf (IEEE) while e5m2 saturates finite
// values to its largest (0x7B) and keeps Inf as Inf. NaN: 0x7E00 / 0x7F.
template <int kM>
HWY_INLINE hn::Vec<DU> F32ToE5Bits(hn::Vec<DF> f) {
  static_assert(kM == 10 || kM == 2, "f16 or e5m2");
  constexpr uint32_t kInfCode = 0x1Fu << kM;  // 0x7C00 / 0x7C
  constexpr uint32_t kNaNCode = kM == 10 ? 0x7E00u : 0x7Fu;
  const DI di;
  const DU du;
  const auto b = hn::BitCast(du, f);
  const auto abs = hn::And(b, hn::Set(du, 0x7FFFFFFFu));
  const auto absi = hn::BitCast(di, abs);
  const auto sign = hn::And(hn::ShiftRight<26 - kM>(b), hn::Set(du, 1u << (5 + kM)));
  const auto big = hn::Set(du, 0x477FFFFFu);
  const auto clamped = hn::BitCast(du, hn::Min(absi, hn::BitCast(di, big)));
  auto mag = RoundToE5Finite<kM>(clamped);
  if constexpr (kM == 10) {
    mag = hn::IfThenElse(hn::RebindMask(du, (absi > hn::BitCast(di, big))),
                         hn::Set(du, kInfCode), mag);
  } else {
    mag = hn::Min(mag, hn::Set(du, kInfCode - 1));  // saturate
    mag = hn::IfThenElse(hn::RebindMask(du, (absi == hn::Set(di, 0x7F800000))),
                         hn::Set(du, kInfCode), mag);
  }
  mag = hn::Or(mag, sign);
  return hn::IfThenElse(hn::RebindMask(du, (absi > hn::Set(di, 0x7F800000))),
                        hn::Set(du, kNaNCode), mag);
}
HWY_INLINE hn::Vec<DU> F32ToF16Bits(hn::Vec<DF> f) { return F32ToE5Bits<10>(f); }
HWY_INLINE hn::Vec<DU> F32ToE5M2Bits(hn::Vec<DF> f) { return F32ToE5Bits<2>(f); }

// One vector of elements of type T at element i of p, as f32 (exact).
template <DType T>
HWY_INLINE hn::Vec<DF> LoadF(const void* p, size_t i) {
  const DF df;
  if constexpr (T == DType::kFloat32) {
    return hn::LoadU(df, static_cast<const float*>(p) + i);
  } else {
    using D16 = hn::Rebind<uint16_t, DF>;
    const hn::Vec<DU> h = hn::PromoteTo(DU(), hn::LoadU(D16(), static_cast<const uint16_t*>(p) + i));
    if constexpr (T == DType::kBFloat16) {
      return hn::BitCast(df, hn::ShiftLeft<16>(h));
    } else {
      return F16BitsToF32(h);
    }
  }
}

// The vector v stored as elements of type T at element i of p (bf16 and f16 rounded to
// nearest even, as the reference rounds).
template <DType T>
HWY_INLINE void StoreF(hn::Vec<DF> v, void* p, size_t i) {
  if constexpr (T == DType::kFloat32) {
    hn::StoreU(v, DF(), static_cast<float*>(p) + i);
  } else {
    using D16 = hn::Rebind<uint16_t, DF>;
    const hn::Vec<DU> h = T == DType::kBFloat16 ? F32ToBF16Bits(v) : F32ToF16Bits(v);
    hn::StoreU(hn::DemoteTo(D16(), hn::BitCast(DI(), h)), D16(), static_cast<uint16_t*>(p) + i);
  }
}

}  // namespace cvt
}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
