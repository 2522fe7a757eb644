// equarx codec — SIMD kernels of the dynamic block-scaled int8 format (Format::kInt8Block).
//
// Highway foreach_target translation unit (see raw.cc for the pattern). Wire image of a
// segment: [nb little-endian f32 scales][n int8 codes]; the rules are in codec.h and
// docs/wire_format.md, the executable spec in reference.cc.
//
// How a block is encoded here (bitwise identical to the reference on every target):
//   pass 1  m = max over the block of (bits(x) & 0x7FFFFFFF), an *integer* max. For
//           non-negative floats the integer order is the float order, and Inf/NaN have the
//           largest patterns, so m >= 0x7F800000 says "the block holds a non-finite value":
//           such (rare) blocks are handed to the reference (internal::RefEncodeInt8Block),
//           identical by definition. Otherwise a = float(m) exactly.
//   scale   a < 2^-120 -> s = inv = 0, all codes 0; else s = a/127, inv = 127/a (scalar f32).
//   pass 2  y = x * inv (one f32 multiply), q = round-to-nearest-even(y) by the exact magic
//           add (y + 1.5*2^23, |y| < 2^22), clamp to [-127, 127], narrow to int8.
// Highway's own Round/NearestInt are not used: its EMU128 emulation rounds 0.49999997 up.
//
// Blocks are software-pipelined: pass 1 and the divisions of block b+1 are issued before
// pass 2 of block b, so the reduction/division latency hides behind the next block's loads;
// the common block sizes 64 and 128 are compiled with constant trip counts.
// DecodeAccumulateEncode is fused per block: pass 1 writes the block's f32 sums
// local + q*s into half of a stack tile (blocks up to kTile/2 floats) while taking their max;
// pass 2 quantizes from the tile (still in L1). Longer blocks recompute the sums in pass 2
// instead. No heap allocation anywhere. Element tails shorter than a vector are scalar code
// with the same f32 operations. DecodeAccumulate stores NaN sums as the canonical 0x7FC00000
// (as the reference does; NaN + NaN's payload would depend on the compiler's operand order).
#include <cstring>

#include "codec/codec.h"

namespace equarx::codec::internal {  // defined in reference.cc
using ElemFn = float (*)(const void* ctx, size_t j);
float LoadAsF32(DType t, const void* p, size_t i);
void RefEncodeInt8Block(ElemFn get, const void* ctx, size_t len, uint8_t* scale_le,
                        int8_t* codes);
float RefDecodeInt8(uint32_t scale_bits, int8_t q);
}  // namespace equarx::codec::internal

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/int8_block.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Defined in raw.cc for the same target.
void CvtF32ToBF16(const float* in, size_t n, uint16_t* out);
void CvtF32ToF16(const float* in, size_t n, uint16_t* out);

namespace {

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using D16 = hn::Rebind<uint16_t, DF>;
using D8 = hn::Rebind<int8_t, DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;

constexpr size_t kTile = 4096;  // floats of the DecodeAccumulateEncode tile (two halves)
constexpr uint32_t kInfBits = 0x7F800000u;
constexpr uint32_t kTinyBits = 0x03800000u;    // bits of 2^-120
constexpr float kRoundMagic = 12582912.0f;     // 1.5 * 2^23
constexpr int32_t kRoundMagicBits = 0x4B400000;

uint32_t BitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FloatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- element loads (vector at element i, and scalar) --------------------------------------

template <DType T>
HWY_INLINE VF LoadF(const void* p, size_t i) {
  const DF df;
  const DU du;
  if constexpr (T == DType::kFloat32) {
    return hn::LoadU(df, static_cast<const float*>(p) + i);
  } else {
    const VU h = hn::PromoteTo(du, hn::LoadU(D16(), static_cast<const uint16_t*>(p) + i));
    if constexpr (T == DType::kBFloat16) {
      return hn::BitCast(df, hn::ShiftLeft<16>(h));
    } else {  // f16 -> f32, exact (same as raw.cc F16BitsToF32)
      const DI di;
      const VU sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
      const VU em = hn::And(h, hn::Set(du, 0x7FFFu));
      const VI emi = hn::BitCast(di, em);
      const VU normal = hn::Add(hn::ShiftLeft<13>(em), hn::Set(du, (127u - 15u) << 23));
      const VU special = hn::Add(hn::ShiftLeft<13>(em), hn::Set(du, (255u - 31u) << 23));
      const VU sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, emi), hn::Set(df, 0x1p-24f)));
      VU mag = hn::IfThenElse(hn::RebindMask(du, emi < hn::Set(di, 0x400)), sub, normal);
      mag = hn::IfThenElse(hn::RebindMask(du, emi > hn::Set(di, 0x7BFF)), special, mag);
      return hn::BitCast(df, hn::Or(mag, sign));
    }
  }
}

template <DType T>
HWY_INLINE float LoadOne(const void* p, size_t i) {
  if constexpr (T == DType::kFloat32) return static_cast<const float*>(p)[i];
  return internal::LoadAsF32(T, p, i);
}

constexpr uint32_t kCanonicalNaN = 0x7FC00000u;

// local + decoded, NaN stored canonical (as the reference does).
HWY_INLINE float CanonSum(float local, float decoded) {
  const float x = local + decoded;
  return x != x ? FloatOf(kCanonicalNaN) : x;
}

HWY_INLINE VI AbsBits(VF v) {
  return hn::BitCast(DI(), hn::And(hn::BitCast(DU(), v), hn::Set(DU(), 0x7FFFFFFFu)));
}

HWY_INLINE VF DecodeVec(const int8_t* codes, size_t i, VF vs) {
  const VI q = hn::PromoteTo(DI(), hn::LoadU(D8(), codes + i));
  return hn::Mul(hn::ConvertTo(DF(), q), vs);
}

HWY_INLINE void QuantizeStore(VF x, VF vinv, int8_t* codes, size_t i) {
  const DI di;
  const VF t = hn::Add(hn::Mul(x, vinv), hn::Set(DF(), kRoundMagic));
  VI q = hn::Sub(hn::BitCast(di, t), hn::Set(di, kRoundMagicBits));
  q = hn::Min(hn::Max(q, hn::Set(di, -127)), hn::Set(di, 127));
  hn::StoreU(hn::DemoteTo(D8(), q), D8(), codes + i);
}

HWY_INLINE int8_t QuantizeOne(float x, float inv) {
  const float t = x * inv + kRoundMagic;
  int32_t q = int32_t(BitsOf(t)) - kRoundMagicBits;
  q = q < -127 ? -127 : (q > 127 ? 127 : q);
  return static_cast<int8_t>(q);
}

HWY_INLINE uint32_t MaxLane(VI v) { return uint32_t(hn::GetLane(hn::MaxOfLanes(DI(), v))); }

// The scale of a finite block from its max abs bits m (computed as soon as m is known, so
// the divisions overlap with the next block's first pass).
struct BlockScale {
  uint32_t m;   // max abs bits; >= kInfBits: the block goes to the reference
  float s, inv;
};
HWY_INLINE BlockScale ScaleOf(uint32_t m) {
  BlockScale r{m, 0.0f, 0.0f};
  if (m >= kTinyBits && m < kInfBits) {
    const float a = FloatOf(m);
    r.s = a / 127.0f;
    r.inv = 127.0f / a;
  }
  return r;
}

// Stores the scale of a finite block and quantizes it with `load(i)` (vector at i) /
// `get(j)` (scalar at j).
template <class Load, class Get>
HWY_INLINE void FinishBlock(const BlockScale& bs, size_t len, Load load, Get get,
                            uint8_t* scale, int8_t* codes) {
  if (bs.m < kTinyBits) {
    std::memset(scale, 0, 4);
    std::memset(codes, 0, len);
    return;
  }
  const float inv = bs.inv;
  const uint32_t sb = BitsOf(bs.s);
  std::memcpy(scale, &sb, 4);
  const size_t N = hn::Lanes(DF());
  const VF vinv = hn::Set(DF(), inv);
  size_t i = 0;
  for (; i + 2 * N <= len; i += 2 * N) {
    const VF x0 = load(i);
    const VF x1 = load(i + N);
    QuantizeStore(x0, vinv, codes, i);
    QuantizeStore(x1, vinv, codes, i + N);
  }
  for (; i + N <= len; i += N) QuantizeStore(load(i), vinv, codes, i);
  for (; i < len; ++i) codes[i] = QuantizeOne(get(i), inv);
}

template <class Load, class Get>
HWY_INLINE uint32_t MaxAbsBits(size_t len, Load load, Get get) {
  const size_t N = hn::Lanes(DF());
  VI m0 = hn::Zero(DI()), m1 = hn::Zero(DI());
  size_t i = 0;
  for (; i + 2 * N <= len; i += 2 * N) {
    m0 = hn::Max(m0, AbsBits(load(i)));
    m1 = hn::Max(m1, AbsBits(load(i + N)));
  }
  for (; i + N <= len; i += N) m0 = hn::Max(m0, AbsBits(load(i)));
  uint32_t m = MaxLane(hn::Max(m0, m1));
  for (; i < len; ++i) {
    const uint32_t b = BitsOf(get(i)) & 0x7FFFFFFFu;
    m = b > m ? b : m;
  }
  return m;
}

// ---- reference fallbacks for blocks with NaN/Inf -------------------------------------------

struct SrcCtx {
  DType type;
  const void* p;
};
float GetSrc(const void* ctx, size_t j) {
  const auto* c = static_cast<const SrcCtx*>(ctx);
  return internal::LoadAsF32(c->type, c->p, j);
}
struct SumCtx {
  DType type;
  const void* local;
  uint32_t scale_bits;
  const int8_t* codes;
};
float GetSum(const void* ctx, size_t j) {
  const auto* c = static_cast<const SumCtx*>(ctx);
  return internal::LoadAsF32(c->type, c->local, j) +
         internal::RefDecodeInt8(c->scale_bits, c->codes[j]);
}

uint32_t LoadScale(const uint8_t* p) {
  uint32_t b;
  std::memcpy(&b, p, 4);
  return b;
}

const void* Advance(DType t, const void* p, size_t elems) {
  return static_cast<const uint8_t*>(p) + elems * (t == DType::kFloat32 ? 4 : 2);
}

// ---- Encode ----------------------------------------------------------------------------------

// Stage 1 of a block: its max abs bits and scale. Stage 2: quantize (or the reference).
// The loop runs stage 1 of block b+1 before stage 2 of block b (software pipelining), so the
// reduction and the two divisions of one block hide behind the loads of the next.
template <DType T>
HWY_INLINE BlockScale EncodeStage1(const void* p, size_t len) {
  auto load = [p](size_t i) HWY_ATTR { return LoadF<T>(p, i); };
  auto get = [p](size_t j) HWY_ATTR { return LoadOne<T>(p, j); };
  return ScaleOf(MaxAbsBits(len, load, get));
}

template <DType T>
HWY_INLINE void EncodeStage2(const BlockScale& bs, const void* p, size_t len, uint8_t* scale,
                             int8_t* codes) {
  if (bs.m >= kInfBits) {
    const SrcCtx ctx{T, p};
    internal::RefEncodeInt8Block(&GetSrc, &ctx, len, scale, codes);
    return;
  }
  auto load = [p](size_t i) HWY_ATTR { return LoadF<T>(p, i); };
  auto get = [p](size_t j) HWY_ATTR { return LoadOne<T>(p, j); };
  FinishBlock(bs, len, load, get, scale, codes);
}

// kB != 0: the block size known at compile time (full blocks get constant trip counts).
template <DType T, size_t kB>
void EncodeT(const void* src, size_t n, size_t B, uint8_t* wire) {
  const size_t nb = (n + B - 1) / B;
  int8_t* codes = reinterpret_cast<int8_t*>(wire + 4 * nb);
  const size_t full = n / B;  // blocks of exactly B elements
  const size_t L = kB != 0 ? kB : B;
  if (full > 0) {
    BlockScale cur = EncodeStage1<T>(src, L);
    for (size_t b = 0; b < full; ++b) {
      BlockScale next{};
      if (b + 1 < full) next = EncodeStage1<T>(Advance(T, src, (b + 1) * B), L);
      EncodeStage2<T>(cur, Advance(T, src, b * B), L, wire + 4 * b, codes + b * B);
      cur = next;
    }
  }
  if (full < nb) {  // the last, partial block
    const size_t begin = full * B;
    const void* p = Advance(T, src, begin);
    EncodeStage2<T>(EncodeStage1<T>(p, n - begin), p, n - begin, wire + 4 * full,
                    codes + begin);
  }
}

// ---- Decode to f32, DecodeAccumulate -------------------------------------------------------

// out[i] = decode(codes[i]) of one unflagged block with scale s.
HWY_INLINE void DecodeBlockF32(const int8_t* codes, size_t len, float s, float* out) {
  const size_t N = hn::Lanes(DF());
  const VF vs = hn::Set(DF(), s);
  size_t i = 0;
  for (; i + N <= len; i += N) hn::StoreU(DecodeVec(codes, i, vs), DF(), out + i);
  for (; i < len; ++i) out[i] = float(codes[i]) * s;
}

// Decodes elements [off, off + len) of the segment's block b into out (f32).
HWY_INLINE void DecodeRange(const uint8_t* wire, size_t nb, size_t B, size_t b, size_t off, size_t len,
                 float* out) {
  const int8_t* codes = reinterpret_cast<const int8_t*>(wire + 4 * nb) + b * B + off;
  const uint32_t sb = LoadScale(wire + 4 * b);
  if (sb & 0x80000000u) {
    for (size_t j = 0; j < len; ++j) out[j] = internal::RefDecodeInt8(sb, codes[j]);
  } else {
    DecodeBlockF32(codes, len, FloatOf(sb), out);
  }
}

template <DType T>
HWY_INLINE void DecodeAccumulateBlock(uint32_t sb, const int8_t* cp, const void* lp, size_t len,
                                      float* op) {
  const size_t N = hn::Lanes(DF());
  if (sb & 0x80000000u) {
    for (size_t j = 0; j < len; ++j)
      op[j] = CanonSum(LoadOne<T>(lp, j), internal::RefDecodeInt8(sb, cp[j]));
    return;
  }
  const float s = FloatOf(sb);
  const VF vs = hn::Set(DF(), s);
  const VF canon = hn::BitCast(DF(), hn::Set(DU(), kCanonicalNaN));
  size_t i = 0;
  for (; i + N <= len; i += N) {
    const VF x = hn::Add(LoadF<T>(lp, i), DecodeVec(cp, i, vs));
    hn::StoreU(hn::IfThenElse(hn::IsNaN(x), canon, x), DF(), op + i);
  }
  for (; i < len; ++i) op[i] = CanonSum(LoadOne<T>(lp, i), float(cp[i]) * s);
}

template <DType T, size_t kB>
void DecodeAccumulateT(const uint8_t* wire, size_t n, size_t B, const void* local, float* out) {
  const size_t nb = (n + B - 1) / B;
  const int8_t* codes = reinterpret_cast<const int8_t*>(wire + 4 * nb);
  for (size_t b = 0; b < nb; ++b) {
    const size_t begin = b * B;
    const size_t len = n - begin < B ? n - begin : B;
    const uint32_t sb = LoadScale(wire + 4 * b);
    const void* lp = Advance(T, local, begin);
    if (kB != 0 && len == kB) {
      DecodeAccumulateBlock<T>(sb, codes + begin, lp, kB, out + begin);
    } else {
      DecodeAccumulateBlock<T>(sb, codes + begin, lp, len, out + begin);
    }
  }
}

// ---- DecodeAccumulateEncode (fused) --------------------------------------------------------

// DecodeAccumulateEncode, pipelined like EncodeT. Stage 1 of a block writes its f32 sums
// local + q*s into one half of the stack tile (blocks up to kTile/2 floats) and takes their
// max; stage 2 quantizes from the tile (still in L1). Longer blocks recompute the sums in
// stage 2 instead of storing them. Flagged input blocks and blocks whose sums are not finite
// go to the reference, which recomputes the sums itself.
struct DaeBlock {
  const int8_t* cp;  // input codes
  const void* lp;    // local values
  uint32_t sb;       // input scale bits
};

template <DType T>
HWY_INLINE BlockScale DaeStage1(const DaeBlock& blk, size_t len, float* HWY_RESTRICT tile) {
  if (blk.sb & 0x80000000u) return BlockScale{kInfBits, 0.0f, 0.0f};
  const size_t N = hn::Lanes(DF());
  const float s = FloatOf(blk.sb);
  const VF vs = hn::Set(DF(), s);
  const void* lp = blk.lp;
  const int8_t* cp = blk.cp;
  auto sum = [lp, cp, vs](size_t i) HWY_ATTR {
    return hn::Add(LoadF<T>(lp, i), DecodeVec(cp, i, vs));
  };
  auto sum1 = [lp, cp, s](size_t j) HWY_ATTR { return LoadOne<T>(lp, j) + float(cp[j]) * s; };
  if (len > kTile / 2) return ScaleOf(MaxAbsBits(len, sum, sum1));
  VI m0 = hn::Zero(DI()), m1 = hn::Zero(DI());
  size_t i = 0;
  for (; i + 2 * N <= len; i += 2 * N) {
    const VF x0 = sum(i);
    const VF x1 = sum(i + N);
    hn::Store(x0, DF(), tile + i);
    hn::Store(x1, DF(), tile + i + N);
    m0 = hn::Max(m0, AbsBits(x0));
    m1 = hn::Max(m1, AbsBits(x1));
  }
  for (; i + N <= len; i += N) {
    const VF x = sum(i);
    hn::Store(x, DF(), tile + i);
    m0 = hn::Max(m0, AbsBits(x));
  }
  uint32_t m = MaxLane(hn::Max(m0, m1));
  for (; i < len; ++i) {
    tile[i] = sum1(i);
    const uint32_t bits = BitsOf(tile[i]) & 0x7FFFFFFFu;
    m = bits > m ? bits : m;
  }
  return ScaleOf(m);
}

template <DType T>
HWY_INLINE void DaeStage2(const BlockScale& bs, const DaeBlock& blk, size_t len,
                          const float* HWY_RESTRICT tile, uint8_t* scale_out, int8_t* qp) {
  if (bs.m >= kInfBits) {
    const SumCtx ctx{T, blk.lp, blk.sb, blk.cp};
    internal::RefEncodeInt8Block(&GetSum, &ctx, len, scale_out, qp);
    return;
  }
  if (len > kTile / 2) {
    const float s = FloatOf(blk.sb);
    const VF vs = hn::Set(DF(), s);
    const void* lp = blk.lp;
    const int8_t* cp = blk.cp;
    auto sum = [lp, cp, vs](size_t i) HWY_ATTR {
      return hn::Add(LoadF<T>(lp, i), DecodeVec(cp, i, vs));
    };
    auto sum1 = [lp, cp, s](size_t j) HWY_ATTR { return LoadOne<T>(lp, j) + float(cp[j]) * s; };
    FinishBlock(bs, len, sum, sum1, scale_out, qp);
    return;
  }
  FinishBlock(
      bs, len, [tile](size_t i) HWY_ATTR { return hn::Load(DF(), tile + i); },
      [tile](size_t j) { return tile[j]; }, scale_out, qp);
}

template <DType T, size_t kB>
void DecodeAccumulateEncodeT(const uint8_t* wire_in, size_t n, size_t B, const void* local,
                             uint8_t* wire_out) {
  const size_t nb = (n + B - 1) / B;
  const int8_t* codes_in = reinterpret_cast<const int8_t*>(wire_in + 4 * nb);
  int8_t* codes_out = reinterpret_cast<int8_t*>(wire_out + 4 * nb);
  HWY_ALIGN float tile[kTile];  // two halves: block b uses half b % 2
  auto block = [&](size_t b) {
    return DaeBlock{codes_in + b * B, Advance(T, local, b * B), LoadScale(wire_in + 4 * b)};
  };
  const size_t full = n / B;
  const size_t L = kB != 0 ? kB : B;
  if (full > 0) {
    DaeBlock cur_blk = block(0);
    BlockScale cur = DaeStage1<T>(cur_blk, L, tile);
    for (size_t b = 0; b < full; ++b) {
      DaeBlock next_blk{};
      BlockScale next{};
      if (b + 1 < full) {
        next_blk = block(b + 1);
        next = DaeStage1<T>(next_blk, L, tile + ((b + 1) & 1) * (kTile / 2));
      }
      DaeStage2<T>(cur, cur_blk, L, tile + (b & 1) * (kTile / 2), wire_out + 4 * b,
                   codes_out + b * B);
      cur = next;
      cur_blk = next_blk;
    }
  }
  if (full < nb) {
    const size_t len = n - full * B;
    const DaeBlock blk = block(full);
    DaeStage2<T>(DaeStage1<T>(blk, len, tile), blk, len, tile, wire_out + 4 * full,
                 codes_out + full * B);
  }
}

}  // namespace

// ---- Kernels (dispatched) ----------------------------------------------------------------

// Kernel<T, kB>(args...) for the runtime dtype, with kB = 64 or 128 (the common block sizes,
// compiled with constant trip counts) or 0 (any block size).
#define EQUARX_BY_DTYPE_AND_BLOCK(KERNEL, t, block, ...)                              \
  do {                                                                                 \
    switch (t) {                                                                       \
      case DType::kFloat32:                                                            \
        if (block == 64) return KERNEL<DType::kFloat32, 64>(__VA_ARGS__);             \
        if (block == 128) return KERNEL<DType::kFloat32, 128>(__VA_ARGS__);           \
        return KERNEL<DType::kFloat32, 0>(__VA_ARGS__);                               \
      case DType::kBFloat16:                                                           \
        if (block == 64) return KERNEL<DType::kBFloat16, 64>(__VA_ARGS__);            \
        if (block == 128) return KERNEL<DType::kBFloat16, 128>(__VA_ARGS__);          \
        return KERNEL<DType::kBFloat16, 0>(__VA_ARGS__);                              \
      case DType::kFloat16:                                                            \
        return KERNEL<DType::kFloat16, 0>(__VA_ARGS__);                               \
    }                                                                                  \
  } while (0)

void Int8EncodeImpl(uint32_t block, DType t, const void* src, size_t n, uint8_t* wire) {
  EQUARX_BY_DTYPE_AND_BLOCK(EncodeT, t, block, src, n, block, wire);
}

void Int8DecodeImpl(uint32_t block, const uint8_t* wire, size_t n, DType t, void* dst) {
  const size_t B = block;
  const size_t nb = (n + B - 1) / B;
  if (t == DType::kFloat32) {
    float* out = static_cast<float*>(dst);
    for (size_t b = 0; b < nb; ++b) {
      const size_t len = n - b * B < B ? n - b * B : B;
      if (len == 64) {
        DecodeRange(wire, nb, B, b, 0, 64, out + b * B);
      } else if (len == 128) {
        DecodeRange(wire, nb, B, b, 0, 128, out + b * B);
      } else {
        DecodeRange(wire, nb, B, b, 0, len, out + b * B);
      }
    }
    return;
  }
  // bf16 / f16: decode into a small f32 tile, then round with raw.cc's conversion.
  constexpr size_t kChunk = 1024;
  HWY_ALIGN float tile[kChunk];
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (size_t b = 0; b < nb; ++b) {
    const size_t len = n - b * B < B ? n - b * B : B;
    for (size_t off = 0; off < len; off += kChunk) {
      const size_t c = len - off < kChunk ? len - off : kChunk;
      DecodeRange(wire, nb, B, b, off, c, tile);
      if (t == DType::kBFloat16) {
        CvtF32ToBF16(tile, c, out + b * B + off);
      } else {
        CvtF32ToF16(tile, c, out + b * B + off);
      }
    }
  }
}

void Int8DecodeAccumulateImpl(uint32_t block, const uint8_t* wire, size_t n, DType t,
                              const void* local, float* out) {
  EQUARX_BY_DTYPE_AND_BLOCK(DecodeAccumulateT, t, block, wire, n, block, local, out);
}

void Int8DecodeAccumulateEncodeImpl(uint32_t block, const uint8_t* wire_in, size_t n, DType t,
                                    const void* local, uint8_t* wire_out) {
  EQUARX_BY_DTYPE_AND_BLOCK(DecodeAccumulateEncodeT, t, block, wire_in, n, block, local,
                            wire_out);
}

#undef EQUARX_BY_DTYPE_AND_BLOCK

int64_t TargetImpl() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

HWY_EXPORT(Int8EncodeImpl);
HWY_EXPORT(Int8DecodeImpl);
HWY_EXPORT(Int8DecodeAccumulateImpl);
HWY_EXPORT(Int8DecodeAccumulateEncodeImpl);
HWY_EXPORT(TargetImpl);

namespace internal {
// Entry points for dispatch.cc.
void Int8Encode(uint32_t block, DType t, const void* src, size_t n, uint8_t* wire) {
  HWY_DYNAMIC_DISPATCH(Int8EncodeImpl)(block, t, src, n, wire);
}
void Int8Decode(uint32_t block, const uint8_t* wire, size_t n, DType t, void* dst) {
  HWY_DYNAMIC_DISPATCH(Int8DecodeImpl)(block, wire, n, t, dst);
}
void Int8DecodeAccumulate(uint32_t block, const uint8_t* wire, size_t n, DType t,
                          const void* local, float* out) {
  HWY_DYNAMIC_DISPATCH(Int8DecodeAccumulateImpl)(block, wire, n, t, local, out);
}
void Int8DecodeAccumulateEncode(uint32_t block, const uint8_t* wire_in, size_t n, DType t,
                                const void* local, uint8_t* wire_out) {
  HWY_DYNAMIC_DISPATCH(Int8DecodeAccumulateEncodeImpl)(block, wire_in, n, t, local, wire_out);
}
int64_t DispatchedTarget() { return HWY_DYNAMIC_DISPATCH(TargetImpl)(); }
}  // namespace internal

}  // namespace equarx::codec
#endif  // HWY_ONCE
