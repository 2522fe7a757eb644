// equarx codec — SIMD kernels of two-level block scales (codec.h, "Two-level scales") for the
// integer block formats (per-target header; included by codec/block_dae-inl.h after
// codec/block_simd-inl.h, whose loads, scales and code ops it uses).
//
// Encode, per full block of B elements (B a multiple of 16; blocks of a multiple of 8N go in
// runs of up to 4096 elements, each stage below over the whole run before the next, so that the
// blocks' chains overlap; DecodeAccumulateEncode sums a run into its tile first):
//   pass 1  the block's max abs bits m (the integer max of block_simd-inl.h). m >= Inf bits:
//           the block goes to the reference (RefEncodeBlock); m < tiny: zero scale, codes and
//           multipliers; else the bf16 scale s and inv = 1 / s (ScaleAndInverse).
//   pass 2  per group of max(N, 8) elements (one vector, or the 8 / N vectors of one
//           sub-block when N < 8): the max abs bits of each lane's sub-block of 8, by lane
//           butterflies of Max (lane ^ 1, ^ 2, ^ 4, below N); then per lane, in f32 and in the
//           reference's order, t = (a_k * inv) * (16 / Q), c = min(max(ceil(t) - 1, 0), 15),
//           inv_k = 1 / (s * (c + 1) * 2^-4) looked up among the block's 16 (computed once per
//           block, Recips), and the codes F::Round(x * inv_k).
//           Every operation is a lane-wise IEEE operation the reference also does, so every
//           target gives the reference's bytes.
// Decode / DecodeAccumulate: per vector, each lane's step from its sub-block's multiplier code
// (looked up among the block's 16 steps, computed once per block with SubStepBits' operations,
// Steps), then F::Decode as with one-level scales.
// DecodeAccumulateEncode: the block's sums into a tile (DecodeAccumulate), then the encode of
// the tile; the reference defines the fused kernel as exactly that composition.
// The reference runs: a segment's last block when shorter than B, flagged blocks (element by
// element), stochastic rounding and telemetry (FormatKernels sends those calls to ref::), and
// targets with more than 16 lanes.
#if defined(EQUARX_CODEC_BLOCK_TWO_LEVEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef EQUARX_CODEC_BLOCK_TWO_LEVEL_INL_H_
#undef EQUARX_CODEC_BLOCK_TWO_LEVEL_INL_H_
#else
#define EQUARX_CODEC_BLOCK_TWO_LEVEL_INL_H_
#endif

#include "codec/block_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

constexpr size_t kTLanes = hn::MaxLanes(DF());
constexpr size_t kTwoLevelMaxBlock = 4096;  // the library's largest block (equarx/options.h)
// Whether the SIMD two-level kernels take a call with block B (else the reference does).
constexpr bool TwoLevelSimd(size_t B) {
  return kTLanes <= 16 && B % 16 == 0 && B <= kTwoLevelMaxBlock;
}
// Vectors per group and elements per group: one vector of N >= 8 lanes (N / 8 sub-blocks), or
// the 8 / N vectors of one sub-block.
constexpr size_t kTVecs = kTLanes >= internal::kSubBlock ? 1 : internal::kSubBlock / kTLanes;
constexpr size_t kTGroup = kTVecs * kTLanes;

// Each lane's max over its aligned group of 8 lanes (of one vector when N >= 8; of the whole
// vector when N < 8, the caller having folded the sub-block's vectors into it): in-block
// shuffles lane ^ 1, lane ^ 2 and a swap of 128-bit blocks for lane ^ 4. (Templates called
// unqualified, found by argument-dependent lookup: the shuffles a target lacks are never
// looked up.)
template <class V>
HWY_INLINE V SubBlockMax(V m) {
  if constexpr (kTLanes >= 2) m = hn::Max(m, Shuffle2301(m));
  if constexpr (kTLanes >= 4) m = hn::Max(m, Shuffle1032(m));
  if constexpr (kTLanes >= 8) m = hn::Max(m, SwapAdjacentBlocks(m));
  return m;
}

// The multiplier byte of the two sub-blocks of a 16-lane code vector (lanes 0 and 8).
template <class V>
HWY_INLINE uint8_t NibblePair(V c) {
  return uint8_t(hn::GetLane(c) | (hn::GetLane(UpperHalf(hn::Half<hn::DFromV<V>>(), c)) << 4));
}

// The 16 steps of a block with scale s, step_c = s * (c + 1) * 2^-4 for c = 0..15 (the
// operations of internal::SubStepBits, in its order): the decoders look a sub-block's step up.
struct Steps {
  HWY_ALIGN float v[16];
  explicit Steps(float s) {
    const DF df;
    const VF vs = hn::Set(df, s), one = hn::Set(df, 1.0f), sixteenth = hn::Set(df, 0x1p-4f);
    for (size_t c = 0; c < 16; c += kTLanes) {
      const VF cp1 = hn::Add(hn::ConvertTo(df, hn::Iota(DI(), int32_t(c))), one);
      hn::Store(hn::Mul(hn::Mul(vs, cp1), sixteenth), df, v + c);
    }
  }
};

// Their reciprocals inv_c = 1 / step_c, the encoders' multipliers (one vector division on 16
// lanes, or four on 4).
struct Recips {
  HWY_ALIGN float v[16];
  explicit Recips(float s) {
    const DF df;
    const Steps st(s);
    for (size_t c = 0; c < 16; c += kTLanes)
      hn::Store(hn::Div(hn::Set(df, 1.0f), hn::Load(df, st.v + c)), df, v + c);
  }
};

// The step of each lane of the group starting at element i of a block (i a multiple of
// kTGroup), from the block's steps and the multiplier codes of its sub-blocks from k.
HWY_INLINE VF GroupSteps(const Steps& st, const uint8_t* subs, size_t k) {
  const DF df;
  const VF s0 = hn::Set(df, st.v[internal::LoadSubCode(subs, k)]);
  if constexpr (kTLanes == 16)
    return hn::IfThenElse(hn::FirstN(df, 8), s0, hn::Set(df, st.v[internal::LoadSubCode(subs, k + 1)]));
  return s0;
}

// Pass 2 of a finite block with scale s and inv = 1 / s: multipliers and codes.
template <class F, class Load>
HWY_INLINE void TwoLevelQuantize(Load load, size_t len, float s, float inv, uint8_t* subs,
                                 uint8_t* codes, size_t first) {
  const DF df;
  const DI di;
  const VF vinv = hn::Set(df, inv), one = hn::Set(df, 1.0f);
  const VF zero = hn::Zero(df), fifteen = hn::Set(df, 15.0f);
  const VF k16 = hn::Set(df, 16.0f / F::kQ);
  const Recips r(s);
  for (size_t i = 0; i < len; i += kTGroup) {
    VF x[kTVecs];
    VI m = hn::Zero(di);
    for (size_t v = 0; v < kTVecs; ++v) {
      x[v] = load(i + v * kTLanes);
      m = hn::Max(m, AbsBits(x[v]));
    }
    const VF a = hn::BitCast(df, SubBlockMax(m));
    const VF t = hn::Mul(hn::Mul(a, vinv), k16);
    const VI c = hn::ConvertTo(di, hn::Min(hn::Max(hn::Sub(hn::Ceil(t), one), zero), fifteen));
    const size_t k = (first + i) / internal::kSubBlock;
    VF inv_k;
    if constexpr (kTLanes == 16) {
      inv_k = hn::TableLookupLanes(hn::Load(df, r.v), hn::IndicesFromVec(df, c));
      subs[k / 2] = NibblePair(c);
    } else {
      const uint32_t c0 = uint32_t(hn::GetLane(c));
      inv_k = hn::Set(df, r.v[c0]);
      internal::StoreSubCode(subs, k, c0);
    }
    for (size_t v = 0; v < kTVecs; ++v)
      F::Store(F::Round(hn::Mul(x[v], inv_k)), codes, first + i + v * kTLanes);
  }
}

// ---- Blocks of a multiple of 8N elements (N >= 4): the sub-block maxima by a tree ----------
// Eight vectors of abs bits hold 8N / 8 = N sub-blocks; three levels of pairwise Max over
// ConcatOdd / ConcatEven (which keep lane order) leave one vector whose lane j is the max of
// sub-block j. The multipliers and 1 / step of those N sub-blocks are then one vector of lane
// operations (one division per N sub-blocks), and each data vector takes its lanes' 1 / step
// with one table lookup.
constexpr bool kTree = kTLanes >= 4 && kTLanes <= 16;
constexpr size_t kChunk8 = 8 * kTLanes;

template <class V>
HWY_INLINE V PairMax(V hi, V lo) {
  const hn::DFromV<V> d;
  return hn::Max(ConcatOdd(d, hi, lo), ConcatEven(d, hi, lo));
}

// Max abs bits of the N sub-blocks of the chunk at element i.
template <class Load>
HWY_INLINE VI ChunkSubMax(Load load, size_t i) {
  VI a[8];
  for (size_t v = 0; v < 8; ++v) a[v] = AbsBits(load(i + v * kTLanes));
  const VI u0 = PairMax(a[1], a[0]), u1 = PairMax(a[3], a[2]);
  const VI u2 = PairMax(a[5], a[4]), u3 = PairMax(a[7], a[6]);
  return PairMax(PairMax(u3, u2), PairMax(u1, u0));
}

// The N multiplier codes of c (lanes of 0..15) as N / 2 bytes, lane 2j in the low nibble of
// byte j: each u64 lane (codes 2j, 2j + 1 in its halves) folds its high half down by 28 bits
// and keeps its low byte.
// (A template, so that targets without 64-bit lanes, which never take the tree, never
// instantiate it.)
template <class V>
HWY_INLINE void StoreNibblePairs(V c, uint8_t* out) {
  const hn::Repartition<uint64_t, hn::DFromV<V>> d64;
  const auto v = hn::BitCast(d64, c);
  const auto packed = hn::Or(v, hn::ShiftRight<28>(v));
  const hn::Rebind<uint8_t, decltype(d64)> d8;
  hn::StoreU(hn::TruncateTo(d8, packed), d8, out);
}

template <class F, class Load>
HWY_INLINE void TreeQuantize(Load load, size_t len, float s, float inv, const VI* submax,
                             uint8_t* subs, uint8_t* codes, size_t first) {
  const DF df;
  const DI di;
  const VF vinv = hn::Set(df, inv), vs = hn::Set(df, s), one = hn::Set(df, 1.0f);
  const VF zero = hn::Zero(df), fifteen = hn::Set(df, 15.0f), sixteenth = hn::Set(df, 0x1p-4f);
  const VF k16 = hn::Set(df, 16.0f / F::kQ);
  for (size_t i = 0, ch = 0; i < len; i += kChunk8, ++ch) {
    const VF t = hn::Mul(hn::Mul(hn::BitCast(df, submax[ch]), vinv), k16);
    const VF c = hn::Min(hn::Max(hn::Sub(hn::Ceil(t), one), zero), fifteen);
    const VF invs = hn::Div(one, hn::Mul(hn::Mul(vs, hn::Add(c, one)), sixteenth));
    StoreNibblePairs(hn::ConvertTo(di, c), subs + (first + i) / (2 * internal::kSubBlock));
    for (size_t v = 0; v < 8; ++v) {
      // lane l of data vector v is element v * N + l of the chunk: sub-block (v * N + l) / 8
      const VI idx = hn::ShiftRight<3>(hn::Add(hn::Iota(di, 0), hn::Set(di, int32_t(v * kTLanes))));
      const VF inv_k = hn::TableLookupLanes(invs, hn::IndicesFromVec(df, idx));
      F::Store(F::Round(hn::Mul(load(i + v * kTLanes), inv_k)), codes, first + i + v * kTLanes);
    }
  }
}

// A full block with max abs bits m: a zero block (m < tiny: zero scale, codes and multipliers)
// or a finite one (its bf16 scale s, inv = 1 / s, then quantize(s, inv)). Returns false for
// a flagged block (m >= Inf bits), which the caller hands to the reference.
template <class F, class Quantize>
HWY_INLINE bool TwoLevelFinite(uint32_t m, size_t len, uint8_t* scale, uint8_t* subs,
                               uint8_t* codes, size_t first, Quantize quantize) {
  const internal::ScaleIo sio{2, true, true};
  if (m < F::kTinyBits) {
    internal::StoreScaleBits(scale, 0, sio);
    F::Zero(codes, first, len);
    std::memset(subs + first / 16, 0, len / 16);
    return true;
  }
  if (m >= kInfBits) return false;
  float s, inv;
  internal::ScaleAndInverse(FloatOf(m), F::kQ, sio, &s, &inv);
  internal::StoreScaleBits(scale, BitsOf(s), sio);
  quantize(s, inv);
  return true;
}

// One block of the segment: `load`/`get` its values, `ref_get`/`ref_ctx` the same values for
// the reference (flagged and short blocks). Blocks of a multiple of 8N go through runs
// (TreeEncodeRun) instead.
template <class F, class Load, class Get>
HWY_INLINE void TwoLevelEncodeBlock(Load load, Get get, internal::ElemFn ref_get,
                                    const void* ref_ctx, size_t len, size_t B, uint8_t* scale,
                                    uint8_t* subs, uint8_t* codes, size_t first) {
  const internal::ScaleIo sio{2, true, true};
  if (len == B) {
    auto quantize = [&](float s, float inv) HWY_ATTR {
      TwoLevelQuantize<F>(load, len, s, inv, subs, codes, first);
    };
    if (TwoLevelFinite<F>(MaxAbsBits(len, load, get), len, scale, subs, codes, first, quantize))
      return;
  }
  internal::RefEncodeBlock(F::kFormat, sio, ref_get, ref_ctx, len, internal::Rounding{}, first,
                           scale, codes, nullptr, subs);
}

// A run of nblk full blocks of B elements (B a multiple of 8N, nblk * B <= kTwoLevelMaxBlock)
// from element `first` of the segment; load(i) is element i of the run, which starts at
// `values` (of dtype t: what the reference reads for a flagged block). Pass 1 of every block,
// then every block's scale, then pass 2 of every block: each stage's blocks are independent of
// each other, so the core overlaps them instead of waiting on one block's chain of maxima,
// divisions and roundings. Zero and flagged blocks go through TwoLevelFinite as alone.
constexpr size_t kTreeRun = kTwoLevelMaxBlock / kChunk8;  // blocks (and chunks) of a run, at most
template <class F, class Load>
HWY_INLINE void TreeEncodeRun(Load load, DType t, const void* values, size_t nblk, size_t B,
                              uint8_t* scale, uint8_t* subs, uint8_t* codes, size_t first) {
  const internal::ScaleIo sio{2, true, true};
  const size_t chunks = B / kChunk8;
  VI submax[kTreeRun];  // one vector per chunk of 8N >= 32 elements
  uint32_t m[kTreeRun];
  for (size_t j = 0; j < nblk; ++j) {
    VI mv = hn::Zero(DI());
    for (size_t ch = 0; ch < chunks; ++ch) {
      submax[j * chunks + ch] = ChunkSubMax(load, j * B + ch * kChunk8);
      mv = hn::Max(mv, submax[j * chunks + ch]);
    }
    m[j] = MaxLane(mv);
  }
  auto finite = [&](size_t j) { return m[j] >= F::kTinyBits && m[j] < kInfBits; };
  float s[kTreeRun], inv[kTreeRun];
  for (size_t j = 0; j < nblk; ++j)
    if (finite(j)) internal::ScaleAndInverse(FloatOf(m[j]), F::kQ, sio, &s[j], &inv[j]);
  for (size_t j = 0; j < nblk; ++j) {
    const size_t o = j * B;
    auto quantize = [&](float sj, float invj) HWY_ATTR {
      TreeQuantize<F>([&](size_t i) HWY_ATTR { return load(o + i); }, B, sj, invj,
                      submax + j * chunks, subs, codes, first + o);
    };
    if (finite(j)) {
      internal::StoreScaleBits(scale + 2 * j, BitsOf(s[j]), sio);
      quantize(s[j], inv[j]);
    } else if (!TwoLevelFinite<F>(m[j], B, scale + 2 * j, subs, codes, first + o, quantize)) {
      const SrcCtx ctx{t, Advance(t, values, o)};
      internal::RefEncodeBlock(F::kFormat, sio, &GetSrc, &ctx, B, internal::Rounding{}, first + o,
                               scale + 2 * j, codes, nullptr, subs);
    }
  }
}

// The segment's blocks in runs (kTree and B a multiple of 8N); each run's blocks are handed
// to `run(b, nblk)` (first block, blocks), the last, short block to `last(b)`.
template <class Run, class Last>
HWY_INLINE void ForEachRun(size_t n, size_t B, Run run, Last last) {
  const size_t full = n / B, per = kTwoLevelMaxBlock / B;
  for (size_t b = 0; b < full; b += per) run(b, full - b < per ? full - b : per);
  if (full * B < n) last(full);
}

template <class F, DType T>
void TwoLevelEncodeT(const void* src, size_t n, size_t B, internal::ScaleIo sio, uint8_t* wire) {
  const size_t nb = (n + B - 1) / B;
  uint8_t* subs = wire + internal::SubsOffset(sio, nb);
  uint8_t* codes = wire + internal::CodesOffset(sio, nb, n);
  auto block = [&](size_t b) HWY_ATTR {
    const void* p = Advance(T, src, b * B);
    const size_t len = n - b * B < B ? n - b * B : B;
    const SrcCtx ctx{T, p};
    TwoLevelEncodeBlock<F>([p](size_t i) HWY_ATTR { return LoadF<T>(p, i); },
                           [p](size_t j) HWY_ATTR { return LoadOne<T>(p, j); }, &GetSrc, &ctx,
                           len, B, wire + 2 * b, subs, codes, b * B);
  };
  if constexpr (kTree) {
    if (B % kChunk8 == 0) {
      return ForEachRun(n, B, [&](size_t b0, size_t nblk) HWY_ATTR {
        const void* p = Advance(T, src, b0 * B);
        TreeEncodeRun<F>([p](size_t i) HWY_ATTR { return LoadF<T>(p, i); }, T, p, nblk, B,
                         wire + 2 * b0, subs, codes, b0 * B);
      }, block);
    }
  }
  for (size_t b = 0; b < nb; ++b) block(b);
}

// out[i] = combine(i, decoded element first + i) for the len elements of a block from element
// `first` of the segment (first a multiple of 16): `vec(i, decoded)` for whole vectors of a
// block that is not flagged, `one(i, decoded)` for the others.
template <class F, class Vec, class One>
HWY_INLINE void TwoLevelDecodeBlock(uint32_t sb, const uint8_t* subs, const uint8_t* codes,
                                    size_t first, size_t len, Vec vec, One one) {
  size_t i = 0;
  if (!(sb & 0x80000000u) && len >= kTGroup) {
    const Steps st(FloatOf(sb));
    for (; i + kTGroup <= len; i += kTGroup) {
      const VF vstep = GroupSteps(st, subs, (first + i) / internal::kSubBlock);
      for (size_t v = 0; v < kTVecs; ++v)
        vec(i + v * kTLanes, F::Decode(F::Load(codes, first + i + v * kTLanes), vstep));
    }
  }
  for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t) {
    const uint32_t step = internal::SubStepBits(sb, internal::LoadSubCode(subs, (first + i) / internal::kSubBlock));
    one(i, internal::RefDecodeCode(F::kFormat, step, uint32_t(internal::LoadCode(F::kFormat, codes, first + i))));
  }
}

// Elements [off, off + len) of block b (off a multiple of 16) decoded into out (f32).
template <class F>
HWY_INLINE void TwoLevelDecodeRange(const uint8_t* wire, size_t n, size_t B, internal::ScaleIo sio,
                                    size_t b, size_t off, size_t len, float* out) {
  const size_t nb = (n + B - 1) / B;
  const uint32_t sb = internal::LoadScaleBits(wire + 2 * b, sio);
  TwoLevelDecodeBlock<F>(
      sb, wire + internal::SubsOffset(sio, nb), wire + internal::CodesOffset(sio, nb, n), b * B + off, len,
      [out](size_t i, VF d) HWY_ATTR { hn::StoreU(d, DF(), out + i); },
      [out](size_t i, float d) { out[i] = d; });
}

template <class F>
void TwoLevelDecodeT(const uint8_t* wire, size_t n, size_t B, internal::ScaleIo sio, DType t,
                     void* dst) {
  DecodeByRanges(n, B, t, dst, [&](size_t b, size_t off, size_t len, float* out) HWY_ATTR {
    TwoLevelDecodeRange<F>(wire, n, B, sio, b, off, len, out);
  });
}

// out = f32(local) + decoded for block b (NaN sums canonical), into out (f32, the block's).
template <class F, DType T>
HWY_INLINE void TwoLevelDecodeAccumulateBlock(const uint8_t* wire, size_t n, size_t B,
                                              internal::ScaleIo sio, size_t b, const void* local,
                                              float* out) {
  const size_t nb = (n + B - 1) / B;
  const size_t len = n - b * B < B ? n - b * B : B;
  const void* lp = Advance(T, local, b * B);
  const VF canon = hn::BitCast(DF(), hn::Set(DU(), kCanonicalNaN));
  TwoLevelDecodeBlock<F>(
      internal::LoadScaleBits(wire + 2 * b, sio), wire + internal::SubsOffset(sio, nb),
      wire + internal::CodesOffset(sio, nb, n), b * B, len,
      [lp, out, canon](size_t i, VF d) HWY_ATTR {
        const VF x = hn::Add(LoadF<T>(lp, i), d);
        hn::StoreU(hn::IfThenElse(hn::IsNaN(x), canon, x), DF(), out + i);
      },
      [lp, out](size_t i, float d) { out[i] = CanonSum(LoadOne<T>(lp, i), d); });
}

template <class F, DType T>
void TwoLevelDecodeAccumulateT(const uint8_t* wire, size_t n, size_t B, internal::ScaleIo sio,
                               const void* local, float* out) {
  const size_t nb = (n + B - 1) / B;
  for (size_t b = 0; b < nb; ++b)
    TwoLevelDecodeAccumulateBlock<F, T>(wire, n, B, sio, b, local, out + b * B);
}

template <class F, DType T>
void TwoLevelDecodeAccumulateEncodeT(const uint8_t* wire_in, size_t n, size_t B,
                                     internal::ScaleIo sio, const void* local, uint8_t* wire_out) {
  const size_t nb = (n + B - 1) / B;
  uint8_t* subs = wire_out + internal::SubsOffset(sio, nb);
  uint8_t* codes = wire_out + internal::CodesOffset(sio, nb, n);
  HWY_ALIGN float tile[kTwoLevelMaxBlock];
  const float* tp = tile;
  auto block = [&](size_t b) HWY_ATTR {
    const size_t len = n - b * B < B ? n - b * B : B;
    TwoLevelDecodeAccumulateBlock<F, T>(wire_in, n, B, sio, b, local, tile);
    const SrcCtx ctx{DType::kFloat32, tile};
    TwoLevelEncodeBlock<F>([tp](size_t i) HWY_ATTR { return hn::Load(DF(), tp + i); },
                           [tp](size_t j) { return tp[j]; }, &GetSrc, &ctx, len, B,
                           wire_out + 2 * b, subs, codes, b * B);
  };
  if constexpr (kTree) {
    if (B % kChunk8 == 0) {
      // A run's sums into the tile (at most kTwoLevelMaxBlock of them), then its encode.
      return ForEachRun(n, B, [&](size_t b0, size_t nblk) HWY_ATTR {
        for (size_t j = 0; j < nblk; ++j)
          TwoLevelDecodeAccumulateBlock<F, T>(wire_in, n, B, sio, b0 + j, local, tile + j * B);
        TreeEncodeRun<F>([tp](size_t i) HWY_ATTR { return hn::Load(DF(), tp + i); },
                         DType::kFloat32, tp, nblk, B, wire_out + 2 * b0, subs, codes, b0 * B);
      }, block);
    }
  }
  for (size_t b = 0; b < nb; ++b) block(b);
}

// The four kernels by dtype (FormatKernels calls these for kScaleTwoLevel on the plain path).
template <class F>
struct TwoLevelKernels {
  static void Encode(DType t, const void* src, size_t n, size_t B, internal::ScaleIo sio,
                     uint8_t* wire) {
    switch (t) {
      case DType::kFloat32: return TwoLevelEncodeT<F, DType::kFloat32>(src, n, B, sio, wire);
      case DType::kBFloat16: return TwoLevelEncodeT<F, DType::kBFloat16>(src, n, B, sio, wire);
      case DType::kFloat16: return TwoLevelEncodeT<F, DType::kFloat16>(src, n, B, sio, wire);
    }
  }
  static void DecodeAccumulate(DType t, const uint8_t* wire, size_t n, size_t B,
                               internal::ScaleIo sio, const void* local, float* out) {
    switch (t) {
      case DType::kFloat32: return TwoLevelDecodeAccumulateT<F, DType::kFloat32>(wire, n, B, sio, local, out);
      case DType::kBFloat16: return TwoLevelDecodeAccumulateT<F, DType::kBFloat16>(wire, n, B, sio, local, out);
      case DType::kFloat16: return TwoLevelDecodeAccumulateT<F, DType::kFloat16>(wire, n, B, sio, local, out);
    }
  }
  static void DecodeAccumulateEncode(DType t, const uint8_t* wire_in, size_t n, size_t B,
                                     internal::ScaleIo sio, const void* local,
                                     uint8_t* wire_out) {
    switch (t) {
      case DType::kFloat32: return TwoLevelDecodeAccumulateEncodeT<F, DType::kFloat32>(wire_in, n, B, sio, local, wire_out);
      case DType::kBFloat16: return TwoLevelDecodeAccumulateEncodeT<F, DType::kBFloat16>(wire_in, n, B, sio, local, wire_out);
      case DType::kFloat16: return TwoLevelDecodeAccumulateEncodeT<F, DType::kFloat16>(wire_in, n, B, sio, local, wire_out);
    }
  }
};

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
