// equarx codec — scalar reference of the block-scaled formats (int8, int6, int5, int4, fp8 e4m3,
// fp8 e5m2), element by element: the executable specification of docs/wire_format.md.
//
// Integer codes of `bits` bits (int8, int6, int5, int4) are two's complement, packed low bits
// first; q = 2^(bits-1) - 1, NaN is -q - 1 and ±Inf are ±q in a flagged block (Q = q - 1).
//
// One block: a = max |x| over its finite elements; flagged = it holds NaN/Inf; Q = q or q_flag
// (internal::ParamsOf); a < tiny -> s = inv = 0, else s = a / Q and inv = Q / a (one f32
// division each). A finite x is coded from y = x * inv (one f32 multiply):
//   integers     nearest: clamp(roundeven(y), -Q, Q); stochastic: clamp(floor(y + u), -Q, Q)
//                with u from the counter-based hash of the element's absolute index.
//   e4m3         y rounded to nearest even on the e4m3 grid, saturating at Q (0x7E = 448, or
//                0x7D = 416 in a flagged block); e5m2 likewise at 0x7B = 57344.
//   A code that means -0 is stored as +0 (0x00), so encoder-made wires decode to +0 only.
// Non-finite elements get the reserved codes (RefSpecialCode). The stored scale is bits(s) with
// the sign bit set in a flagged block. The SIMD kernels call RefEncodeBlock for flagged blocks
// and RefQuantize / RefDecodeCode for element tails.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "codec/internal.h"

namespace equarx::codec::internal {
namespace {

constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr uint32_t kInfBits = 0x7F800000u;
constexpr uint32_t kQuietNaN = 0x7FC00000u;

uint32_t BitsOf(float f) { return std::bit_cast<uint32_t>(f); }
float FloatOf(uint32_t u) { return std::bit_cast<float>(u); }
// The two's complement value of the low `bits` bits of code (the higher bits are ignored).
int32_t SignExtend(uint32_t code, unsigned bits) {
  const uint32_t half = 1u << (bits - 1);
  return int32_t((code & ((half << 1) - 1u)) ^ half) - int32_t(half);
}

// The fp8 code of finite y: sign | min(round(|y|), sat); a zero magnitude keeps no sign.
int32_t Fp8Code(float y, int bias, int mbits, int he_over, uint32_t sat) {
  const uint32_t b = BitsOf(y);
  uint32_t mag = RoundToNarrow(b & kAbsMask, bias, mbits, he_over);
  mag = std::min(mag, sat);
  if (mag == 0) return 0;
  return int32_t(((b >> 24) & 0x80u) | mag);
}

}  // namespace

int32_t RefQuantize(Format f, float y, bool flagged, bool stochastic, float u) {
  const BlockFormatInfo& p = ParamsOf(f);
  switch (f) {
    case Format::kFp8E4M3Block: return Fp8Code(y, 7, 3, 16, flagged ? 0x7Du : 0x7Eu);
    case Format::kFp8E5M2Block: return Fp8Code(y, 15, 2, 31, 0x7Bu);
    default: {
      const float q_max = flagged ? p.q_flag : p.q;
      float r;
      if (stochastic) {
        const float t = y + u;  // one f32 add
        r = std::floor(t);
      } else {
        r = std::nearbyint(y);  // round to nearest even (default rounding mode)
      }
      r = std::fmin(std::fmax(r, -q_max), q_max);
      return int32_t(r);
    }
  }
}

int32_t RefSpecialCode(Format f, float x) {
  const bool nan = std::isnan(x);
  const bool neg = !nan && x < 0;
  switch (f) {
    case Format::kFp8E4M3Block: return nan ? 0x7F : (neg ? 0xFE : 0x7E);
    case Format::kFp8E5M2Block: return nan ? 0x7F : (neg ? 0xFC : 0x7C);
    default: {  // integer codes: NaN is the one code below -q, ±Inf are ±q
      const int32_t q = int32_t(ParamsOf(f).q);
      return nan ? -q - 1 : (neg ? -q : q);
    }
  }
}

float RefDecodeCode(Format f, uint32_t scale_bits, uint32_t code) {
  const bool flagged = (scale_bits & 0x80000000u) != 0;
  const float s = FloatOf(scale_bits & kAbsMask);
  const float inf = FloatOf(kInfBits), nan = FloatOf(kQuietNaN);
  switch (f) {
    case Format::kFp8E4M3Block: {
      const uint32_t mag = code & 0x7Fu;
      if (mag == 0x7Fu) return nan;
      if (flagged && mag == 0x7Eu) return (code & 0x80u) ? -inf : inf;
      return ref::E4M3ToF32(uint8_t(code)) * s;
    }
    case Format::kFp8E5M2Block: {
      const uint32_t mag = code & 0x7Fu;
      if (mag > 0x7Cu) return nan;
      if (mag == 0x7Cu) return (code & 0x80u) ? -inf : inf;
      return ref::E5M2ToF32(uint8_t(code)) * s;
    }
    default: {  // integer codes: the sign-extended low `bits` bits
      const BlockFormatInfo& p = ParamsOf(f);
      const int32_t q = SignExtend(code, p.bits);
      if (flagged) {
        const int32_t qi = int32_t(p.q);
        if (q == qi) return inf;
        if (q == -qi) return -inf;
        if (q == -qi - 1) return nan;
      }
      return float(q) * s;
    }
  }
}

// Code i occupies bits [i * bits, (i + 1) * bits) of the code part, read as one little-endian
// bit string (docs/wire_format.md, "Code packing"); a code of at most 8 bits touches at most
// 2 bytes.
int32_t LoadCode(Format f, const uint8_t* codes, size_t i) {
  const BlockFormatInfo& p = ParamsOf(f);
  const size_t at = i * p.bits;
  const unsigned sh = unsigned(at % 8);
  uint32_t w = codes[at / 8];
  if (sh + p.bits > 8) w |= uint32_t(codes[at / 8 + 1]) << 8;
  const uint32_t code = w >> sh;
  return p.mbits == 0 ? SignExtend(code, p.bits) : int32_t(code & ((1u << p.bits) - 1u));
}

void StoreCode(Format f, uint8_t* codes, size_t i, int32_t code) {
  const unsigned bits = ParamsOf(f).bits;
  const size_t at = i * bits;
  const unsigned sh = unsigned(at % 8);
  const uint32_t w = (uint32_t(code) & ((1u << bits) - 1u)) << sh;
  // A byte a code starts inside was begun by the code before it (stores run in increasing i).
  codes[at / 8] = uint8_t((sh ? codes[at / 8] : 0u) | w);
  if (sh + bits > 8) codes[at / 8 + 1] = uint8_t(w >> 8);
}

namespace {

// Max |x| over the finite elements j0 .. j1-1, whether one is not finite, and their sum of
// squares (f64, element order).
struct Range {
  float a = 0.0f;
  bool nonfinite = false;
  double sum_sq = 0.0;
};
Range ScanRange(ElemFn get, const void* ctx, size_t j0, size_t j1) {
  Range r;
  for (size_t j = j0; j < j1; ++j) {
    const float x = get(ctx, j);
    if (std::isfinite(x)) {
      r.a = std::fmax(r.a, std::fabs(x));
      r.sum_sq += double(x) * double(x);
    } else {
      r.nonfinite = true;
    }
  }
  return r;
}

// Codes of elements j0 .. j1-1 with multiplier inv; returns how many |x * inv| exceeded q_max.
uint64_t QuantizeRange(Format f, ElemFn get, const void* ctx, size_t j0, size_t j1, float inv,
                       float q_max, bool flagged, bool sr, const Rounding& rnd, size_t first,
                       uint8_t* codes) {
  uint64_t clipped = 0;
  for (size_t j = j0; j < j1; ++j) {
    const float x = get(ctx, j);
    int32_t q;
    if (!std::isfinite(x)) {
      q = RefSpecialCode(f, x);
    } else {
      const float y = x * inv;
      if (std::fabs(y) > q_max) ++clipped;
      const float u = sr ? Uniform(HashBits(rnd, rnd.offset + first + j)) : 0.0f;
      q = RefQuantize(f, y, flagged, sr, u);
    }
    StoreCode(f, codes, first + j, q);
  }
  return clipped;
}

}  // namespace

// One-level: the block's elements coded with inv. Two-level (codec.h, "Two-level scales"):
// per sub-block of kSubBlock elements its code c_k, step t_k and inv_k = 1 / t_k, and its
// elements coded with inv_k, one telemetry estimate per sub-block.
void RefEncodeBlock(Format f, ScaleIo sio, ElemFn get, const void* ctx, size_t len,
                    const Rounding& rnd, size_t first, uint8_t* scale_le, uint8_t* codes,
                    EncodeStats* stats, uint8_t* subs) {
  const Range blk = ScanRange(get, ctx, 0, len);
  const float a = blk.a;
  const bool nonfinite = blk.nonfinite;
  const BlockFormatInfo& p = ParamsOf(f);
  const float q_max = nonfinite ? p.q_flag : p.q;
  float s = 0.0f, inv = 0.0f;
  if (!(a < p.tiny)) ScaleAndInverse(a, q_max, sio, &s, &inv);
  const bool sr = rnd.stochastic && IsIntBlockFormat(f);
  uint64_t clipped = 0;
  if (!sio.two_level) {
    clipped = QuantizeRange(f, get, ctx, 0, len, inv, q_max, nonfinite, sr, rnd, first, codes);
    if (stats) AddBlockStats(stats, f, sr, s, a, len, blk.sum_sq);
  } else {
    for (size_t k0 = 0; k0 < len; k0 += kSubBlock) {
      const size_t k1 = std::min(len, k0 + kSubBlock);
      const Range sub = ScanRange(get, ctx, k0, k1);
      const uint32_t c = nonfinite ? 15u : SubCodeOf(sub.a, inv, q_max);
      const float t = FloatOf(SubStepBits(BitsOf(s), c));
      const float inv_k = t > 0.0f ? 1.0f / t : 0.0f;
      clipped += QuantizeRange(f, get, ctx, k0, k1, inv_k, q_max, nonfinite, sr, rnd, first, codes);
      StoreSubCode(subs, (first + k0) / kSubBlock, c);
      if (stats) AddBlockStats(stats, f, sr, t, a, k1 - k0, sub.sum_sq);  // a: flushed as the block
    }
  }
  StoreScaleBits(scale_le, BitsOf(s) | (nonfinite ? 0x80000000u : 0u), sio);
  if (stats) stats->clipped += clipped;
}

}  // namespace equarx::codec::internal
