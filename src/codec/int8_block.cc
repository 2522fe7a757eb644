// equarx codec — SIMD kernels of the dynamic block-scaled int8 format (Format::kInt8Block).
//
// Highway foreach_target translation unit (see raw.cc for the pattern); the pipeline shared by
// every block format is codec/block_simd-inl.h, this file gives int8's code ops:
//   q = clamp(roundeven(y), -127, 127) (exact magic add, |y| < 2^22), one byte per code.
//   The fast nearest-even loop rounds with cvtps2dq on AVX-512/AVX2/SSE4 and packs four
//   vectors of codes into one store. DecodeAccumulateEncode at B = 64 on AVX2, and at B = 64
//   and 128 on AVX-512 (two blocks at a time), keeps a block's sums in registers
//   (block_dae-inl.h, DaeBlockInRegisters, DaeBlockPairInRegisters).
// Stochastic rounding: q = clamp(floor(y + u), -Q, Q), u from the counter-based hash.
// Wire rules in codec.h and docs/wire_format.md; executable spec in reference_block.cc.
#include <cstring>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/int8_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/block_simd-inl.h"
#include "codec/block_dae-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

// roundeven(y) for |y| < 2^31: on x86 one cvtps2dq, which rounds by MXCSR (round to nearest
// even: the default mode the whole codec assumes); elsewhere the magic add.
HWY_INLINE VI RoundEvenFast(VF y) {
#if EQUARX_AVX512
  return VI{_mm512_cvtps_epi32(y.raw)};
#elif HWY_TARGET == HWY_AVX2
  return VI{_mm256_cvtps_epi32(y.raw)};
#elif HWY_TARGET == HWY_SSE4
  return VI{_mm_cvtps_epi32(y.raw)};
#else
  return RoundEven(y);
#endif
}

struct Int8Fmt : internal::RowConstants<Format::kInt8Block> {
  static constexpr bool kFixedBlocks = true;

  static HWY_INLINE VI Round(VF y) { return ClampQ<127>(RoundEven(y)); }
  static HWY_INLINE VI RoundSR(VF y, VF u) { return ClampQ<127>(FloorSum(y, u)); }
  static HWY_INLINE void Store(VI q, uint8_t* codes, size_t i) {
    hn::StoreU(hn::DemoteTo(D8(), q), D8(), reinterpret_cast<int8_t*>(codes) + i);
  }
  static HWY_INLINE VI Load(const uint8_t* codes, size_t i) {
    return hn::PromoteTo(DI(), hn::LoadU(D8(), reinterpret_cast<const int8_t*>(codes) + i));
  }
  static HWY_INLINE VF Decode(VI q, VF vs) { return hn::Mul(hn::ConvertTo(DF(), q), vs); }
  static HWY_INLINE void Zero(uint8_t* codes, size_t first, size_t len) {
    std::memset(codes + first, 0, len);
  }
  // The nearest-even loop of a finite block: y = x * inv, four vectors per iteration. On
  // AVX-512 / AVX2 / SSE4 the codes are rounded by cvtps2dq and the four i32 code vectors
  // narrowed together (two packssdw, one packsswb, on AVX-512 and AVX2 one dword permute) into
  // one store; saturation gives the upper clamp 127 and one byte max the lower clamp -127,
  // which is clamp(q, -127, 127) exactly.
  template <class Load>
  static HWY_INLINE void QuantizeBlock(Load load, VF vinv, size_t len, uint8_t* codes,
                                       size_t first, size_t* pi) {
    const size_t N = hn::Lanes(DF());
    size_t i = *pi;
#if EQUARX_AVX512 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
    int8_t* out = reinterpret_cast<int8_t*>(codes) + first;
#endif
    for (; i + 4 * N <= len; i += 4 * N) {
      const VI q0 = RoundEvenFast(hn::Mul(load(i), vinv));
      const VI q1 = RoundEvenFast(hn::Mul(load(i + N), vinv));
      const VI q2 = RoundEvenFast(hn::Mul(load(i + 2 * N), vinv));
      const VI q3 = RoundEvenFast(hn::Mul(load(i + 3 * N), vinv));
#if EQUARX_AVX512
      // Per 128-bit lane k the packs leave q0[4k..4k+3] q1[4k..] q2[4k..] q3[4k..], i.e.
      // dword 4k + v holds vector v's k-th group of four; one dword permute restores the order.
      const __m512i p01 = _mm512_packs_epi32(q0.raw, q1.raw);
      const __m512i p23 = _mm512_packs_epi32(q2.raw, q3.raw);
      __m512i b = _mm512_packs_epi16(p01, p23);
      b = _mm512_permutexvar_epi32(
          _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), b);
      b = _mm512_max_epi8(b, _mm512_set1_epi8(-127));
      _mm512_storeu_si512(out + i, b);
#elif HWY_TARGET == HWY_AVX2
      const __m256i p01 = _mm256_packs_epi32(q0.raw, q1.raw);
      const __m256i p23 = _mm256_packs_epi32(q2.raw, q3.raw);
      __m256i b = _mm256_packs_epi16(p01, p23);  // dwords: q0lo q1lo q2lo q3lo q0hi ...
      b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      b = _mm256_max_epi8(b, _mm256_set1_epi8(-127));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), b);
#elif HWY_TARGET == HWY_SSE4
      const __m128i p01 = _mm_packs_epi32(q0.raw, q1.raw);
      const __m128i p23 = _mm_packs_epi32(q2.raw, q3.raw);
      const __m128i b = _mm_max_epi8(_mm_packs_epi16(p01, p23), _mm_set1_epi8(-127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), b);
#else
      Store(ClampQ<127>(q0), codes, first + i);
      Store(ClampQ<127>(q1), codes, first + i + N);
      Store(ClampQ<127>(q2), codes, first + i + 2 * N);
      Store(ClampQ<127>(q3), codes, first + i + 3 * N);
#endif
    }
    *pi = i;
  }
};

}  // namespace

// ---- Kernels (dispatched) ----------------------------------------------------------------

#define EQUARX_INT8_KERNELS(spec, K) FormatKernels<Int8Fmt>::K
EQUARX_BLOCK_FORMAT_IMPLS(Int8, EQUARX_INT8_KERNELS)

int64_t TargetImpl() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

#define EQUARX_NEVER(spec) false
EQUARX_BLOCK_FORMAT_EXPORTS(Int8, EQUARX_NEVER)
HWY_EXPORT(TargetImpl);

namespace internal {
int64_t DispatchedTarget() { return HWY_DYNAMIC_DISPATCH(TargetImpl)(); }
}  // namespace internal

}  // namespace equarx::codec
#endif  // HWY_ONCE
