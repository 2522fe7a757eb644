// equarx codec — vector dtype conversions shared by raw.cc and the block formats' loads
// (per-target header, included inside a foreach_target unit). Integer arithmetic on bit
// patterns plus exact f32 products, so every target gives the reference's bits.
#if defined(EQUARX_CODEC_CONVERT_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef EQUARX_CODEC_CONVERT_SIMD_INL_H_
#undef EQUARX_CODEC_CONVERT_SIMD_INL_H_
#else
#define EQUARX_CODEC_CONVERT_SIMD_INL_H_
#endif

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

}  // namespace cvt
}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
