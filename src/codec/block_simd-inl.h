// equarx codec — the SIMD pipeline shared by every block-scaled format (per-target header).
//
// Included inside the foreach_target part of every block format's unit (int8_block.cc,
// int4_block.cc, fp8_block.cc for e4m3 and e5m2), with the usual Highway per-target include
// guard. A format is a traits struct F (see int8_block.cc) giving its constants (kFormat, kQ,
// kTinyBits: from its table row, by deriving from internal::RowConstants) and vector code ops:
// Round(y) (nearest even, unflagged block), RoundSR(y, u) (stochastic), Store/Load of N codes
// at element i of the segment's code part, Decode(codes, s) of an unflagged block.
//
// How a block is encoded (bitwise identical to reference_block.cc on every target):
//   pass 1  m = max over the block of (bits(x) & 0x7FFFFFFF), an *integer* max. For
//           non-negative floats the integer order is the float order, and Inf/NaN have the
//           largest patterns, so m >= 0x7F800000 says "the block holds a non-finite value":
//           such (rare) blocks are handed to the reference (internal::RefEncodeBlock),
//           identical by definition. Otherwise a = float(m) exactly.
//   scale   a < tiny -> s = inv = 0, all codes 0; else s = a/Q, inv = Q/a (scalar f32).
//   pass 2  y = x * inv (one f32 multiply), then F::Round(y) or F::RoundSR(y, u).
// Blocks are software-pipelined: pass 1 and the divisions of block b+1 are issued before
// pass 2 of block b, so the reduction/division latency hides behind the next block's loads.
// DecodeAccumulateEncode (fused, per block) and the glue of the format units are in
// codec/block_dae-inl.h. Element tails shorter than a vector call
// the reference's per-element functions. kOpt = false compiles the plain nearest-even path;
// kOpt = true adds the runtime-selected stochastic rounding and telemetry.
#if defined(EQUARX_CODEC_BLOCK_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef EQUARX_CODEC_BLOCK_SIMD_INL_H_
#undef EQUARX_CODEC_BLOCK_SIMD_INL_H_
#else
#define EQUARX_CODEC_BLOCK_SIMD_INL_H_
#endif

#include <cstring>

#include "codec/convert_simd-inl.h"
#include "codec/internal.h"
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
using DU8 = hn::Rebind<uint8_t, DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;

// EQUARX_AVX512: the AVX-512 targets (AVX3 and the later ones Highway orders before it), for
// the few kernels written with x86 intrinsics; redefined for each target a unit is compiled for.
#undef EQUARX_AVX512
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define EQUARX_AVX512 1
#else
#define EQUARX_AVX512 0
#endif

constexpr size_t kTile = 4096;  // floats of the DecodeAccumulateEncode tile (two halves)
constexpr uint32_t kInfBits = 0x7F800000u;
constexpr uint32_t kCanonicalNaN = 0x7FC00000u;
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr int32_t kRoundMagicBits = 0x4B400000;

HWY_INLINE uint32_t BitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
HWY_INLINE float FloatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- element loads and stores (vector at element i, and scalar) --------------------------------------

using cvt::LoadF;   // convert_simd-inl.h: one vector of the dtype as f32 (exact)
using cvt::StoreF;  // and stored back (the reference's rounding)

template <DType T>
HWY_INLINE float LoadOne(const void* p, size_t i) {
  if constexpr (T == DType::kFloat32) return static_cast<const float*>(p)[i];
  return internal::LoadAsF32(T, p, i);
}

// local + decoded, NaN stored canonical (as the reference does).
HWY_INLINE float CanonSum(float local, float decoded) {
  const float x = local + decoded;
  return x != x ? FloatOf(kCanonicalNaN) : x;
}

HWY_INLINE VI AbsBits(VF v) {
  return hn::BitCast(DI(), hn::And(hn::BitCast(DU(), v), hn::Set(DU(), 0x7FFFFFFFu)));
}

// Scalar tails and per-element loops count in 32 bits (a block has < 2^32 elements): with a
// size_t counter GCC's -Waggressive-loop-optimizations reasons about impossible trip counts
// ("iteration 2^62-1 invokes undefined behavior") for the constant block sizes.
HWY_INLINE uint32_t MaxLane(VI v) { return uint32_t(hn::GetLane(hn::MaxOfLanes(DI(), v))); }

// Round to nearest even of |y| < 2^22 by the exact magic add (Highway's own Round/NearestInt
// are not used: its EMU128 emulation rounds 0.49999997 up).
HWY_INLINE VI RoundEven(VF y) {
  const DI di;
  const VF t = hn::Add(y, hn::Set(DF(), kRoundMagic));
  return hn::Sub(hn::BitCast(di, t), hn::Set(di, kRoundMagicBits));
}
// floor(y + u), the add one f32 operation: the nearest-even integer r of t, minus 1 if r > t.
HWY_INLINE VI FloorSum(VF y, VF u) {
  const DI di;
  const VF t = hn::Add(y, u);
  const VI r = RoundEven(t);
  const VI too_big = hn::VecFromMask(di, hn::RebindMask(di, hn::ConvertTo(DF(), r) > t));
  return hn::Add(r, too_big);  // mask lanes are -1
}

// clamp(q, -kQInt, kQInt): the integer formats' saturation.
template <int kQInt>
HWY_INLINE VI ClampQ(VI q) {
  const DI di;
  return hn::Min(hn::Max(q, hn::Set(di, -kQInt)), hn::Set(di, kQInt));
}

// ---- counter-based random bits (the vector form of internal::HashBits) --------------------

HWY_INLINE VU Mix32V(VU h) {
  const DU du;
  h = hn::Xor(h, hn::ShiftRight<16>(h));
  h = hn::Mul(h, hn::Set(du, 0x7FEB352Du));
  h = hn::Xor(h, hn::ShiftRight<15>(h));
  h = hn::Mul(h, hn::Set(du, 0x846CA68Bu));
  return hn::Xor(h, hn::ShiftRight<16>(h));
}
// u in [0, 1) of the N elements with absolute indices base .. base + N - 1.
HWY_INLINE VF UniformV(const internal::Rounding& r, uint64_t base) {
  const DU du;
  const DI di;
  const uint32_t lo0 = uint32_t(base);
  const VU lo = hn::Add(hn::Set(du, lo0), hn::Iota(du, 0));
  const VU flip = hn::Set(du, 0x80000000u);  // unsigned lo < lo0 (a carry into the high word)
  const auto carry = hn::BitCast(di, hn::Xor(lo, flip)) < hn::BitCast(di, hn::Xor(hn::Set(du, lo0), flip));
  const VU hi = hn::Sub(hn::Set(du, uint32_t(base >> 32)), hn::BitCast(du, hn::VecFromMask(di, carry)));
  const VU h = Mix32V(hn::Xor(hn::Xor(Mix32V(hn::Xor(lo, hn::Set(du, r.k0))), hi),
                              hn::Set(du, r.k1)));
  const VI top = hn::BitCast(di, hn::ShiftRight<8>(h));
  return hn::Mul(hn::ConvertTo(DF(), top), hn::Set(DF(), 0x1p-24f));
}

// ---- block scale ----------------------------------------------------------------------------

// The scale of a finite block from its max abs bits m (computed as soon as m is known, so
// the divisions overlap with the next block's first pass).
struct BlockScale {
  uint32_t m;  // max abs bits; >= kInfBits: the block goes to the reference
  float s, inv;
};
template <class F>
HWY_INLINE BlockScale ScaleOf(uint32_t m, internal::ScaleIo sio) {
  BlockScale r{m, 0.0f, 0.0f};
  if (m >= F::kTinyBits && m < kInfBits) internal::ScaleAndInverse(FloatOf(m), F::kQ, sio, &r.s, &r.inv);
  return r;
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
  for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t) {
    const uint32_t b = BitsOf(get(i)) & 0x7FFFFFFFu;
    m = b > m ? b : m;
  }
  return m;
}

// Sum of squares of a finite block's values in f64, element order (telemetry only; the same
// bits as the reference's).
template <class Get>
HWY_INLINE double SumSq(size_t len, Get get) {
  double ss = 0.0;
  for (size_t j = 0; j < len; ++j) {
    const double v = double(get(j));
    ss += v * v;
  }
  return ss;
}

// Runtime options of one encoding call (kOpt kernels only).
struct Opt {
  internal::Rounding rnd;
  EncodeStats* stats;
};

// Stores the scale of a finite block and quantizes it: `load(i)` (vector at i) / `get(j)`
// (scalar at j) give the block's values, its codes go to elements first.. of `codes`.
template <class F, bool kOpt, class Load, class Get>
HWY_INLINE void FinishBlock(const BlockScale& bs, size_t len, Load load, Get get,
                            internal::ScaleIo sio, uint8_t* scale, uint8_t* codes, size_t first,
                            const Opt* o) {
  const bool sr = kOpt && o->rnd.stochastic;
  if (bs.m < F::kTinyBits) {
    internal::StoreScaleBits(scale, 0, sio);
    F::Zero(codes, first, len);
    if (kOpt && o->stats)
      internal::AddBlockStats(o->stats, F::kFormat, sr, 0.0f, FloatOf(bs.m), len, SumSq(len, get));
    return;
  }
  const float inv = bs.inv;
  internal::StoreScaleBits(scale, BitsOf(bs.s), sio);
  const size_t N = hn::Lanes(DF());
  const VF vinv = hn::Set(DF(), inv);
  size_t i = 0;
  if constexpr (!kOpt) {
    F::QuantizeBlock(load, vinv, len, codes, first, &i);  // the format's fast loop
    for (; i + N <= len; i += N) F::Store(F::Round(hn::Mul(load(i), vinv)), codes, first + i);
    for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t)
      internal::StoreCode(F::kFormat, codes, first + i,
                          internal::RefQuantize(F::kFormat, get(i) * inv, false, false, 0.0f));
  } else {
    const VF vq = hn::Set(DF(), F::kQ);
    size_t clipped = 0;
    const bool count = o->stats != nullptr;
    const uint64_t base = o->rnd.offset + first;
    for (; i + N <= len; i += N) {
      const VF y = hn::Mul(load(i), vinv);
      if (count) clipped += hn::CountTrue(DF(), hn::Abs(y) > vq);
      F::Store(sr ? F::RoundSR(y, UniformV(o->rnd, base + i)) : F::Round(y), codes, first + i);
    }
    for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t) {
      const float y = get(i) * inv;
      if (count && std::fabs(y) > F::kQ) ++clipped;
      const float u = sr ? internal::Uniform(internal::HashBits(o->rnd, base + i)) : 0.0f;
      internal::StoreCode(F::kFormat, codes, first + i,
                          internal::RefQuantize(F::kFormat, y, false, sr, u));
    }
    if (count) {
      o->stats->clipped += clipped;
      internal::AddBlockStats(o->stats, F::kFormat, sr, bs.s, FloatOf(bs.m), len, SumSq(len, get));
    }
  }
}

// ---- reference fallbacks for blocks with NaN/Inf -------------------------------------------

using internal::GetSrc;
using internal::SrcCtx;
HWY_INLINE const void* Advance(DType t, const void* p, size_t elems) {
  return static_cast<const uint8_t*>(p) + elems * (t == DType::kFloat32 ? 4 : 2);
}

// ---- Encode ----------------------------------------------------------------------------------

template <class F, DType T>
HWY_INLINE BlockScale EncodeStage1(const void* p, size_t len, internal::ScaleIo sio) {
  auto load = [p](size_t i) HWY_ATTR { return LoadF<T>(p, i); };
  auto get = [p](size_t j) HWY_ATTR { return LoadOne<T>(p, j); };
  return ScaleOf<F>(MaxAbsBits(len, load, get), sio);
}

template <class F, DType T, bool kOpt>
HWY_INLINE void EncodeStage2(const BlockScale& bs, const void* p, size_t len,
                             internal::ScaleIo sio, uint8_t* scale, uint8_t* codes, size_t first,
                             const Opt* o) {
  if (bs.m >= kInfBits) {
    const SrcCtx ctx{T, p};
    internal::RefEncodeBlock(F::kFormat, sio, &GetSrc, &ctx, len,
                             o ? o->rnd : internal::Rounding{}, first, scale, codes,
                             o ? o->stats : nullptr);
    return;
  }
  auto load = [p](size_t i) HWY_ATTR { return LoadF<T>(p, i); };
  auto get = [p](size_t j) HWY_ATTR { return LoadOne<T>(p, j); };
  FinishBlock<F, kOpt>(bs, len, load, get, sio, scale, codes, first, o);
}

// kB != 0: the block size known at compile time (full blocks get constant trip counts).
template <class F, DType T, size_t kB, bool kOpt>
void EncodeT(const void* src, size_t n, size_t B, internal::ScaleIo sio, uint8_t* wire,
             const Opt* o) {
  const size_t nb = (n + B - 1) / B;
  const size_t sbytes = sio.bytes;
  uint8_t* codes = wire + internal::CodesOffset(sio, nb, n);
  const size_t full = n / B;  // blocks of exactly B elements
  const size_t L = kB != 0 ? kB : B;
  if (full > 0) {
    BlockScale cur = EncodeStage1<F, T>(src, L, sio);
    for (size_t b = 0; b < full; ++b) {
      BlockScale next{};
      if (b + 1 < full) next = EncodeStage1<F, T>(Advance(T, src, (b + 1) * B), L, sio);
      EncodeStage2<F, T, kOpt>(cur, Advance(T, src, b * B), L, sio, wire + sbytes * b, codes,
                               b * B, o);
      cur = next;
    }
  }
  if (full < nb) {  // the last, partial block
    const size_t begin = full * B;
    const void* p = Advance(T, src, begin);
    EncodeStage2<F, T, kOpt>(EncodeStage1<F, T>(p, n - begin, sio), p, n - begin, sio,
                             wire + sbytes * full, codes, begin, o);
  }
}

// ---- Decode to f32, DecodeAccumulate -------------------------------------------------------

// Decodes elements [off, off + len) of the segment's block b into out (f32).
template <class F>
HWY_INLINE void DecodeRange(const uint8_t* wire, size_t nb, size_t B, internal::ScaleIo sio,
                            size_t b, size_t off, size_t len, float* out) {
  const uint8_t* codes = wire + internal::CodesOffset(sio, nb, 0);  // n matters for two-level only
  const size_t first = b * B + off;
  const uint32_t sb = internal::LoadScaleBits(wire + sio.bytes * b, sio);
  const size_t N = hn::Lanes(DF());
  size_t i = 0;
  if (!(sb & 0x80000000u)) {  // separate loops per case: constant lengths unroll cleanly
    const VF vs = hn::Set(DF(), FloatOf(sb));
    for (; i + N <= len; i += N) hn::StoreU(F::Decode(F::Load(codes, first + i), vs), DF(), out + i);
    for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t)
      out[i] = internal::RefDecodeCode(F::kFormat, sb,
                                       uint32_t(internal::LoadCode(F::kFormat, codes, first + i)));
    return;
  }
  for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t)
    out[i] = internal::RefDecodeCode(F::kFormat, sb,
                                     uint32_t(internal::LoadCode(F::kFormat, codes, first + i)));
}

template <class F, DType T>
HWY_INLINE void DecodeAccumulateBlock(uint32_t sb, const uint8_t* codes, size_t first,
                                      const void* lp, size_t len, float* op) {
  const size_t N = hn::Lanes(DF());
  size_t i = 0;
  if (!(sb & 0x80000000u)) {
    const VF vs = hn::Set(DF(), FloatOf(sb));
    const VF canon = hn::BitCast(DF(), hn::Set(DU(), kCanonicalNaN));
    for (; i + N <= len; i += N) {
      const VF x = hn::Add(LoadF<T>(lp, i), F::Decode(F::Load(codes, first + i), vs));
      hn::StoreU(hn::IfThenElse(hn::IsNaN(x), canon, x), DF(), op + i);
    }
    for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t) {
      const int32_t q = internal::LoadCode(F::kFormat, codes, first + i);
      op[i] = CanonSum(LoadOne<T>(lp, i), internal::RefDecodeCode(F::kFormat, sb, uint32_t(q)));
    }
    return;
  }
  for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t) {
    const int32_t q = internal::LoadCode(F::kFormat, codes, first + i);
    op[i] = CanonSum(LoadOne<T>(lp, i), internal::RefDecodeCode(F::kFormat, sb, uint32_t(q)));
  }
}

template <class F, DType T, size_t kB>
void DecodeAccumulateT(const uint8_t* wire, size_t n, size_t B, internal::ScaleIo sio,
                       const void* local, float* out) {
  const size_t nb = (n + B - 1) / B;
  const uint8_t* codes = wire + internal::CodesOffset(sio, nb, n);
  for (size_t b = 0; b < nb; ++b) {
    const size_t begin = b * B;
    const size_t len = n - begin < B ? n - begin : B;
    const uint32_t sb = internal::LoadScaleBits(wire + sio.bytes * b, sio);
    const void* lp = Advance(T, local, begin);
    if (kB != 0 && len == kB) {
      DecodeAccumulateBlock<F, T>(sb, codes, begin, lp, kB, out + begin);
    } else {
      DecodeAccumulateBlock<F, T>(sb, codes, begin, lp, len, out + begin);
    }
  }
}

// Decode to dtype t through `range(b, off, len, out)`, which decodes elements [off, off + len)
// of block b into f32: straight into dst for f32; bf16 / f16 through a small f32 tile, rounded
// with raw.cc's conversion.
template <class Range>
HWY_INLINE void DecodeByRanges(size_t n, size_t B, DType t, void* dst, Range range) {
  const size_t nb = (n + B - 1) / B;
  if (t == DType::kFloat32) {
    float* out = static_cast<float*>(dst);
    for (size_t b = 0; b < nb; ++b) range(b, 0, n - b * B < B ? n - b * B : B, out + b * B);
    return;
  }
  constexpr size_t kChunk = 1024;
  HWY_ALIGN float tile[kChunk];
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (size_t b = 0; b < nb; ++b) {
    const size_t len = n - b * B < B ? n - b * B : B;
    for (size_t off = 0; off < len; off += kChunk) {
      const size_t c = len - off < kChunk ? len - off : kChunk;
      range(b, off, c, tile);
      if (t == DType::kBFloat16) {
        CvtF32ToBF16(tile, c, out + b * B + off);
      } else {
        CvtF32ToF16(tile, c, out + b * B + off);
      }
    }
  }
}

template <class F>
void DecodeT(const uint8_t* wire, size_t n, size_t B, internal::ScaleIo sio, DType t, void* dst) {
  const size_t nb = (n + B - 1) / B;
  DecodeByRanges(n, B, t, dst, [&](size_t b, size_t off, size_t len, float* out) HWY_ATTR {
    if (len == 64 && off == 0) {  // constant trip counts for the common blocks
      DecodeRange<F>(wire, nb, B, sio, b, 0, 64, out);
    } else if (len == 128 && off == 0) {
      DecodeRange<F>(wire, nb, B, sio, b, 0, 128, out);
    } else {
      DecodeRange<F>(wire, nb, B, sio, b, off, len, out);
    }
  });
}

}  // namespace

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
