// equarx codec — SIMD kernels of the block-scaled fp8 formats: kFp8E4M3Block, kFp8E5M2Block.
//
// Highway foreach_target translation unit; the pipeline is codec/block_simd-inl.h, this file
// gives the code ops of the two formats (one code byte per element, sign | magnitude):
//   encode  y = x * inv with |y| <= Q (up to an ulp); |y| is first clamped to Q (the integer min
//           of the bit patterns; rounding is monotonic and Q is on the grid, so this is the
//           saturation), then rounded to nearest even with integer arithmetic: normal results
//           (abs + rebias + half - 1 + odd) >> dropped bits, subnormal results by the exact
//           add |y| + 2^(1 - bias - mbits + 23) in f32 (whose ulp is the narrow subnormal unit).
//           A zero magnitude keeps no sign (the code 0x00).
//   decode  the code widened exactly to f32 times s; e4m3 0x7F/0xFF and e5m2 NaN codes give
//           the canonical NaN, e5m2 0x7C/0xFC give ±Inf (never Inf * s, which is NaN at s = 0).
// Flagged blocks (NaN/Inf inside) are encoded and decoded by the reference, as for int8. The
// fp8 formats always round to nearest even (WireSpec::rounding is ignored).
#include <cstring>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/fp8_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/block_simd-inl.h"
#include "codec/block_dae-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

// fp8 code (i32 lanes 0..255) of finite y, magnitude saturated at kSatBits (the f32 bits of Q).
template <int kBias, int kM, uint32_t kSatBits>
HWY_INLINE VI Fp8Round(VF y) {
  const DF df;
  const DI di;
  const DU du;
  constexpr int kDrop = 23 - kM;
  const VU b = hn::BitCast(du, y);
  const VI absi = hn::Min(hn::BitCast(di, hn::And(b, hn::Set(du, 0x7FFFFFFFu))),
                          hn::Set(di, int32_t(kSatBits)));
  const VU abs = hn::BitCast(du, absi);
  const VU odd = hn::And(hn::ShiftRight<kDrop>(abs), hn::Set(du, 1u));
  const VU bias =
      hn::Set(du, uint32_t(int32_t(kBias - 127) * (1 << 23)) + ((1u << (kDrop - 1)) - 1));
  const VU normal = hn::ShiftRight<kDrop>(hn::Add(hn::Add(abs, bias), odd));
  const VF magic = hn::BitCast(df, hn::Set(du, uint32_t((127 - kBias) + kDrop + 1) << 23));
  const VU sub =
      hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), magic)), hn::BitCast(du, magic));
  const auto is_sub = absi < hn::Set(di, int32_t(uint32_t(127 - kBias + 1) << 23));
  const VU mag = hn::IfThenElse(hn::RebindMask(du, is_sub), sub, normal);
  const VU sign = hn::And(hn::ShiftRight<24>(b), hn::Set(du, 0x80u));
  const VU code = hn::IfThenZeroElse(hn::Eq(mag, hn::Zero(du)), hn::Or(mag, sign));
  return hn::BitCast(di, code);
}

struct Fp8Base {
  static constexpr bool kFixedBlocks = false;
  static HWY_INLINE void Store(VI q, uint8_t* codes, size_t i) {
    hn::StoreU(hn::DemoteTo(DU8(), q), DU8(), codes + i);
  }
  static HWY_INLINE VI Load(const uint8_t* codes, size_t i) {
    return hn::BitCast(DI(), hn::PromoteTo(DU(), hn::LoadU(DU8(), codes + i)));
  }
  static HWY_INLINE void Zero(uint8_t* codes, size_t first, size_t len) {
    std::memset(codes + first, 0, len);
  }
  template <class Load>
  static HWY_INLINE void QuantizeBlock(Load, VF, size_t, uint8_t*, size_t, size_t*) {}
};

// One fp8 grid: exponent bias kBias, kM mantissa bits, saturation kSatBits (the f32 bits of
// Q). Decode: normal codes by shifting the exponent-mantissa bits into place and rebiasing,
// subnormal codes (exponent field 0) as em * 2^(1 - bias - kM), then the specials: e4m3 has
// NaN at em = 0x7F only; e5m2 has Inf at em = 0x7C and NaN above it.
template <Format kF, int kBias, int kM, uint32_t kSatBits>
struct Fp8Fmt : Fp8Base, internal::RowConstants<kF> {  // kQ: the float of kSatBits
  static HWY_INLINE VI Round(VF y) { return Fp8Round<kBias, kM, kSatBits>(y); }
  static HWY_INLINE VI RoundSR(VF y, VF) { return Round(y); }
  static HWY_INLINE VF Decode(VI q, VF vs) {
    const DF df;
    const DI di;
    const DU du;
    const VU c = hn::BitCast(du, q);
    const VU sign = hn::ShiftLeft<24>(hn::And(c, hn::Set(du, 0x80u)));
    const VU em = hn::And(c, hn::Set(du, 0x7Fu));
    const VI emi = hn::BitCast(di, em);
    const VU normal =
        hn::Add(hn::ShiftLeft<23 - kM>(em), hn::Set(du, uint32_t(127 - kBias) << 23));
    const float sub_unit = kM == 3 ? 0x1p-9f : 0x1p-16f;  // 2^(1 - bias - kM)
    static_assert(kM == 3 ? kBias == 7 : (kM == 2 && kBias == 15), "e4m3 or e5m2");
    const VU sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, emi), hn::Set(df, sub_unit)));
    const VU mag = hn::IfThenElse(hn::RebindMask(du, emi < hn::Set(di, 1 << kM)), sub, normal);
    VF v = hn::Mul(hn::BitCast(df, hn::Or(mag, sign)), vs);
    if constexpr (kM == 3) {
      const auto nan = hn::RebindMask(df, hn::Eq(emi, hn::Set(di, 0x7F)));
      return hn::IfThenElse(nan, hn::BitCast(df, hn::Set(du, kCanonicalNaN)), v);
    } else {
      const VF inf = hn::BitCast(df, hn::Or(sign, hn::Set(du, kInfBits)));
      v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(emi, hn::Set(di, 0x7C))), inf, v);
      const auto nan = hn::RebindMask(df, emi > hn::Set(di, 0x7C));
      return hn::IfThenElse(nan, hn::BitCast(df, hn::Set(du, kCanonicalNaN)), v);
    }
  }
};
using E4M3Fmt = Fp8Fmt<Format::kFp8E4M3Block, 7, 3, 0x43E00000u>;   // Q = 448
using E5M2Fmt = Fp8Fmt<Format::kFp8E5M2Block, 15, 2, 0x47600000u>;  // Q = 57344

}  // namespace

// ---- Kernels (dispatched) ----------------------------------------------------------------

// One unit for both fp8 formats: the wire spec's format picks the traits.
#define EQUARX_FP8_KERNELS(spec, K) \
  ((spec).format == Format::kFp8E5M2Block ? &FormatKernels<E5M2Fmt>::K : &FormatKernels<E4M3Fmt>::K)
EQUARX_BLOCK_FORMAT_IMPLS(Fp8, EQUARX_FP8_KERNELS)

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

// Two-level scales (never chosen by the library for fp8) run the reference.
#define EQUARX_FP8_NEVER(spec) ((spec).scale == kScaleTwoLevel)
EQUARX_BLOCK_FORMAT_EXPORTS(Fp8, EQUARX_FP8_NEVER)

}  // namespace equarx::codec
#endif  // HWY_ONCE
