// equarx codec — declarations private to src/codec (never included outside it).
//
// The translation units of the codec call each other through these: reference.cc and
// reference_block.cc (the scalar specification, also used by the SIMD units for tails and for
// the rare blocks holding NaN/Inf, so those are identical by definition), int8_block.cc,
// int4_block.cc, packed_block.cc (int6 + int5), fp8_block.cc (e4m3 + e5m2) and raw.cc (SIMD,
// Highway foreach_target units) and dispatch.cc (the public entry points). Also here, inline
// so that the reference and every SIMD target share one definition: what each block format's
// row of the table (block_formats.inc) implies (parameters, code bytes, kernel row), the
// counter-based hash of stochastic rounding and the per-block telemetry model.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>

#include "codec/codec.h"

namespace equarx::codec::internal {

// ---- reference.cc ----------------------------------------------------------------------------
using ElemFn = float (*)(const void* ctx, size_t j);
/// The ElemFn over an array of `type` values at `p` (ctx is a SrcCtx*; reference.cc).
struct SrcCtx {
  DType type;
  const void* p;
};
float GetSrc(const void* ctx, size_t j);
/// Element i of an array of dtype t, widened exactly to f32.
float LoadAsF32(DType t, const void* p, size_t i);
/// Rounds the magnitude bits `abs` of a finite f32 to a binary float with exponent bias
/// `bias` and `mbits` mantissa bits (subnormals included), to nearest even. Returns the
/// magnitude code; a result >= (he_over << mbits) (he_over: the first biased exponent past
/// the largest finite binade) means it overflowed the finite range.
uint32_t RoundToNarrow(uint32_t abs, int bias, int mbits, int he_over);

// ---- Block formats -------------------------------------------------------------------------
inline bool IsBlockFormat(Format f) { return BlockInfoOf(f) != nullptr; }
/// Integer codes (stochastic rounding applies); false for the raw formats.
inline bool IsIntBlockFormat(Format f) {
  const BlockFormatInfo* r = BlockInfoOf(f);
  return r && r->mbits == 0;
}

/// Scale rules of a block format (its row of block_formats.inc): s = a / Q, inv = Q / a with
/// Q = q (or q_flag in a block holding NaN/Inf), both zero when a < tiny. step = the spacing
/// of the code grid at the top of the range, in units of s (1 for the integer formats), for
/// the telemetry model. Only for block formats.
inline const BlockFormatInfo& ParamsOf(Format f) { return *BlockInfoOf(f); }

/// The constants a SIMD traits struct takes from its format's row (the struct derives from it):
/// kFormat, kQ and kTinyBits (the bits of the flush threshold).
template <Format F>
struct RowConstants {
  static constexpr Format kFormat = F;
  static constexpr float kQ = BlockInfoOf(F)->q;
  static constexpr uint32_t kTinyBits = std::bit_cast<uint32_t>(BlockInfoOf(F)->tiny);
};

/// How a block's scale is stored (WireSpec::scale): its bytes, whether it is bf16, and whether
/// 4-bit sub-scales per kSubBlock elements follow the block scales (kScaleTwoLevel).
/// `codes_at` / `subs_at`: where the codes and sub-scale codes start, in bytes from the wire
/// pointer, for a part of a larger segment (WireSpec::part_codes_at); 0 = this segment's own
/// layout.
struct ScaleIo {
  uint32_t bytes = 4;
  bool bf16 = false;
  bool two_level = false;
  size_t codes_at = 0;
  size_t subs_at = 0;
};
inline ScaleIo ScaleIoOf(const WireSpec& spec) {
  ScaleIo io = spec.scale == kScaleTwoLevel ? ScaleIo{2, true, true}
               : spec.scale == kScaleBF16   ? ScaleIo{2, true, false}
                                            : ScaleIo{4, false, false};
  io.codes_at = size_t(spec.part_codes_at);
  io.subs_at = size_t(spec.part_subs_at);
  return io;
}

// ---- Two-level scales (codec.h, "Two-level scales") ------------------------------------------
inline constexpr size_t kSubBlock = 8;

// ---- Rotation --------------------------------------------------------------------------------
/// The longest rotation block the kernels keep on the stack (the options' largest block); a
/// longer one (the codec API takes any) runs the reference with a heap buffer.
inline constexpr size_t kMaxRotBlock = 4096;
/// Bytes of the sub-scale part of a segment of n elements (0 unless two-level).
inline size_t SubScaleBytes(ScaleIo io, size_t n) {
  return io.two_level ? ((n + kSubBlock - 1) / kSubBlock + 1) / 2 : 0;
}
/// Offset of the code part of a segment of n elements in nb blocks in its own layout.
inline size_t OwnCodesOffset(ScaleIo io, size_t nb, size_t n) {
  return size_t(io.bytes) * nb + SubScaleBytes(io, n);
}
/// Offset of the code part the kernels use: the own layout's, or a part's (ScaleIo::codes_at).
inline size_t CodesOffset(ScaleIo io, size_t nb, size_t n) {
  return io.codes_at ? io.codes_at : OwnCodesOffset(io, nb, n);
}
/// Offset of the sub-scale codes (two-level scales) the kernels use.
inline size_t SubsOffset(ScaleIo io, size_t nb) {
  return io.subs_at ? io.subs_at : size_t(io.bytes) * nb;
}
/// Sub-scale code of sub-block k.
inline uint32_t LoadSubCode(const uint8_t* subs, size_t k) {
  return (uint32_t(subs[k / 2]) >> (4 * (k & 1))) & 0xFu;
}
/// Stores sub-scale code c of sub-block k; like int4 codes, k must run in increasing order
/// (an even k writes its byte, an odd k ORs into it).
inline void StoreSubCode(uint8_t* subs, size_t k, uint32_t c) {
  if (k & 1) {
    subs[k / 2] = uint8_t(subs[k / 2] | (c << 4));
  } else {
    subs[k / 2] = uint8_t(c);
  }
}
/// The step of a sub-block as f32 scale bits: s * (c + 1) * 2^-4 with the block's flag kept.
inline uint32_t SubStepBits(uint32_t block_scale_bits, uint32_t c) {
  float s;
  const uint32_t mag = block_scale_bits & 0x7FFFFFFFu;
  std::memcpy(&s, &mag, 4);
  const float t = s * float(c + 1) * 0x1p-4f;
  uint32_t tb;
  std::memcpy(&tb, &t, 4);
  return tb | (block_scale_bits & 0x80000000u);
}
/// The sub-scale code of a finite sub-block with max |x| a_k in a block with inv = 1 / s and
/// code range q: clamp(ceil((a_k * inv) * (16 / q)) - 1, 0, 15), f32 operations in this order.
inline uint32_t SubCodeOf(float a_k, float inv, float q) {
  const float t = (a_k * inv) * (16.0f / q);
  const float c = std::ceil(t) - 1.0f;
  return c <= 0.0f ? 0u : (c >= 15.0f ? 15u : uint32_t(c));
}
/// The stored scale at p as f32 bits (flag in the sign bit).
inline uint32_t LoadScaleBits(const uint8_t* p, ScaleIo io) {
  if (io.bf16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return uint32_t(h) << 16;
  }
  uint32_t b;
  std::memcpy(&b, p, 4);
  return b;
}
/// Stores f32 scale bits sb (for bf16 already a bf16 value: the low half is zero).
inline void StoreScaleBits(uint8_t* p, uint32_t sb, ScaleIo io) {
  if (io.bf16) {
    const uint16_t h = uint16_t(sb >> 16);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &sb, 4);
  }
}
/// The scale s and the multiplier inv of a finite block with absmax a >= tiny and code range
/// q: f32 s = a / q, inv = q / a; bf16 s = a / q rounded up to bf16 (so no |x| / s exceeds q
/// by more than an f32 rounding), inv = 1 / s. Scalar f32, the same on every target.
inline void ScaleAndInverse(float a, float q, ScaleIo io, float* s, float* inv) {
  *s = a / q;
  if (!io.bf16) {
    *inv = q / a;
    return;
  }
  uint32_t b;
  std::memcpy(&b, s, 4);
  if (b & 0xFFFFu) b = (b + 0x10000u) & 0xFFFF0000u;
  std::memcpy(s, &b, 4);
  *inv = 1.0f / *s;
}

/// Bytes of the code part of a segment of n elements (after the nb scales).
inline size_t CodeBytes(Format f, size_t n) { return (n * ParamsOf(f).bits + 7) / 8; }
/// Whether every block of a segment starts on a whole byte of codes (block * bits a multiple
/// of 8). The SIMD units of the sub-byte formats run the reference where not.
inline bool BlocksStartOnBytes(const WireSpec& spec) {
  return spec.block * ParamsOf(spec.format).bits % 8 == 0;
}

// ---- Stochastic rounding: counter-based random bits -----------------------------------------
inline uint64_t Mix64(uint64_t z) {  // the splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint32_t Mix32(uint32_t h) {  // "lowbias32" (a bijection of 32-bit words)
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return h;
}

/// What the kernels need to round one segment: stochastic or not, the 64-bit key derived from
/// (seed, stream) and the absolute index of the segment's first element.
struct Rounding {
  bool stochastic = false;
  uint32_t k0 = 0, k1 = 0;
  uint64_t offset = 0;
};
inline Rounding RoundingOf(const WireSpec& spec) {
  Rounding r;
  r.stochastic = spec.rounding == kRoundStochastic && IsIntBlockFormat(spec.format);
  const uint64_t key = Mix64(spec.seed ^ Mix64(spec.stream ^ 0x9E3779B97F4A7C15ull));
  r.k0 = uint32_t(key);
  r.k1 = uint32_t(key >> 32);
  r.offset = spec.offset;
  return r;
}
/// The 32 random bits of absolute element index i.
inline uint32_t HashBits(const Rounding& r, uint64_t i) {
  return Mix32(Mix32(uint32_t(i) ^ r.k0) ^ uint32_t(i >> 32) ^ r.k1);
}
/// u in [0, 1): the top 24 bits of the hash times 2^-24 (exact in f32).
inline float Uniform(uint32_t h) { return float(h >> 8) * 0x1p-24f; }

// ---- Rotation signs (codec.h, RotationSignWord) ----------------------------------------------
inline uint64_t RotationKey(uint64_t seed) { return Mix64(seed ^ 0x524F544154494F4Eull); }  // "ROTATION"
inline uint64_t SignWord(uint64_t key, uint64_t b, uint32_t c) { return Mix64(key ^ Mix64((b << 6) | c)); }

// ---- Telemetry model (one update per block) ---------------------------------------------------
/// Adds one block's estimates: flushed (a < tiny) blocks contribute error a per element
/// (uniform model a^2/3); otherwise e = step * |s| is the code spacing at the top of the range
/// and each element contributes e^2/12 (nearest) or e^2/6 (stochastic), max error e/2 or e.
/// `sum_sq` is the block's sum of squared finite values (f64, element order).
inline void AddBlockStats(EncodeStats* st, Format f, bool stochastic, float s_abs, float a,
                          size_t len, double sum_sq) {
  const BlockFormatInfo& p = ParamsOf(f);
  st->values += len;
  st->sum_sq_values += sum_sq;
  if (a < p.tiny) {
    if (a > st->max_abs_err_est) st->max_abs_err_est = a;
    st->sum_sq_err_est += double(len) * double(a) * double(a) / 3.0;
    return;
  }
  const float e = p.step * s_abs;
  const float m = stochastic ? e : 0.5f * e;
  if (m > st->max_abs_err_est) st->max_abs_err_est = m;
  st->sum_sq_err_est += double(len) * double(e) * double(e) / (stochastic ? 6.0 : 12.0);
}

// ---- reference_block.cc: the block formats, element by element --------------------------------
/// Code of a finite element: y = x * inv already formed; u in [0, 1) used when stochastic.
/// Integer formats: the signed integer; fp8: the code byte (sign | magnitude, -0 stored as 0x00).
int32_t RefQuantize(Format f, float y, bool flagged, bool stochastic, float u);
/// Code of a non-finite element (+Inf, -Inf, NaN), possible only in a flagged block.
int32_t RefSpecialCode(Format f, float x);
/// Decoded value of code (low bits as stored) in a block with these scale bits.
float RefDecodeCode(Format f, uint32_t scale_bits, uint32_t code);
/// Code i of a segment's code part (integer formats: sign-extended) / store it. Codes are
/// packed low bits first (`bits` per code); stores must run in increasing i: a store writes
/// the bytes its code starts, and ORs into a byte the code before it began.
int32_t LoadCode(Format f, const uint8_t* codes, size_t i);
void StoreCode(Format f, uint8_t* codes, size_t i, int32_t code);
/// Encodes one block (len elements given by get(ctx, j)) whose first element is element
/// `first` of its segment: writes its scale and codes first..first+len-1; adds to *stats
/// (when non-null) the clip count and the block's estimates. With two-level scales it also
/// writes the sub-scale codes of its sub-blocks into `subs` (the segment's sub-scale part;
/// `first` is then a multiple of 16), with one estimate per sub-block.
void RefEncodeBlock(Format f, ScaleIo sio, ElemFn get, const void* ctx, size_t len,
                    const Rounding& rnd, size_t first, uint8_t* scale_le, uint8_t* codes,
                    EncodeStats* stats, uint8_t* subs = nullptr);

// ---- SIMD units (int8_block.cc, int4_block.cc, packed_block.cc, fp8_block.cc, raw.cc) --------
/// The dispatched kernels of one block-format unit (a row of the codec's kernel table; each
/// unit's EQUARX_BLOCK_FORMAT_EXPORTS defines its row). Same contracts as codec.h's kernels.
struct BlockKernels {
  void (*encode)(const WireSpec& spec, DType t, const void* src, size_t n, uint8_t* wire,
                 EncodeStats* stats);
  void (*decode)(const WireSpec& spec, const uint8_t* wire, size_t n, DType t, void* dst);
  void (*decode_accumulate)(const WireSpec& spec, const uint8_t* wire, size_t n, DType t,
                            const void* local, float* out);
  void (*decode_accumulate_encode)(const WireSpec& spec, const uint8_t* wire_in, size_t n,
                                   DType t, const void* local, uint8_t* wire_out,
                                   EncodeStats* stats);
};
#define EQUARX_X(name, id, codec, text, q, q_flag, tiny, step, bits, mbits, kernels) \
  extern const BlockKernels kernels;
EQUARX_BLOCK_FORMATS(EQUARX_X)  // the kernel rows, one per Highway unit (fp8: both formats)
#undef EQUARX_X
/// The row of a block format; null for the raw formats.
inline const BlockKernels* BlockKernelsOf(Format f) {
  switch (f) {
#define EQUARX_X(name, id, codec, text, q, q_flag, tiny, step, bits, mbits, kernels) \
  case Format::name: return &kernels;
    EQUARX_BLOCK_FORMATS(EQUARX_X)
#undef EQUARX_X
    default: return nullptr;
  }
}
int64_t DispatchedTarget();
void RawEncode(Format f, DType src_type, const void* src, size_t n, uint8_t* wire);
void RawDecode(Format f, const uint8_t* wire, size_t n, DType dst_type, void* dst);
void RawDecodeAccumulate(Format f, const uint8_t* wire, size_t n, DType local_type,
                         const void* local, float* out);
void RawDecodeAccumulateEncode(Format f, const uint8_t* wire_in, size_t n, DType local_type,
                               const void* local, uint8_t* wire_out);
void ConvertDtypes(DType src_type, const void* src, size_t n, DType dst_type, void* dst);
/// out[0 .. len) <- canonical NaN: a guarded rotation's block that must not be rotated.
void PoisonBlock(float* out, size_t len);

}  // namespace equarx::codec::internal
