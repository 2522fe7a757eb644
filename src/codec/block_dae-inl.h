// equarx codec — the fused DecodeAccumulateEncode of every block format, the dispatch over
// dtypes and fixed block sizes, and the glue each format unit writes once (per-target header).
//
// Included after codec/block_simd-inl.h (the shared pipeline: loads, scales, encode, decode)
// inside the foreach_target part of int8_block.cc, int4_block.cc and fp8_block.cc. A format
// unit defines its traits struct and then writes
//   EQUARX_BLOCK_FORMAT_IMPLS(NAME, KERNELS)      inside HWY_NAMESPACE, and
//   EQUARX_BLOCK_FORMAT_EXPORTS(NAME, USE_REF)   in its HWY_ONCE part,
// which define NAME##EncodeImpl etc. (running FormatKernels<F>) and the unit's row
// internal::k##NAME##Kernels of the kernel table (internal.h) that dispatch.cc calls.
#if defined(EQUARX_CODEC_BLOCK_DAE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef EQUARX_CODEC_BLOCK_DAE_INL_H_
#undef EQUARX_CODEC_BLOCK_DAE_INL_H_
#else
#define EQUARX_CODEC_BLOCK_DAE_INL_H_
#endif

#include "codec/block_simd-inl.h"
#include "codec/block_two_level-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

// DecodeAccumulateEncode is fused per block: pass 1 writes the block's f32 sums into half of a
// stack tile (blocks up to kTile/2 floats) while taking their max; pass 2 quantizes from the
// tile. Longer blocks recompute the sums in pass 2. A flagged block (NaN/Inf on either side)
// goes to the reference, which reads the sums through GetSum.
struct SumCtx {
  Format format;
  DType type;
  const void* local;
  uint32_t scale_bits;
  const uint8_t* codes;
  size_t first;
};
float GetSum(const void* ctx, size_t j) {
  const auto* c = static_cast<const SumCtx*>(ctx);
  const int32_t q = internal::LoadCode(c->format, c->codes, c->first + j);
  return internal::LoadAsF32(c->type, c->local, j) +
         internal::RefDecodeCode(c->format, c->scale_bits, uint32_t(q));
}

// ---- DecodeAccumulateEncode (fused) --------------------------------------------------------

struct DaeBlock {
  const uint8_t* codes;  // input code part of the segment
  size_t first;          // the block's first element in the segment
  const void* lp;        // local values of the block
  uint32_t sb;           // input scale bits
};

// The sums f32(local) + decode(code) of an unflagged block with scale vs: N at element i
// (DaeSum) or one at element j (DaeSum1, the tails).
template <class F, DType T>
struct DaeSum {
  DaeBlock b;
  VF vs;
  HWY_INLINE VF operator()(size_t i) const {
    return hn::Add(LoadF<T>(b.lp, i), F::Decode(F::Load(b.codes, b.first + i), vs));
  }
};
template <class F, DType T>
struct DaeSum1 {
  DaeBlock b;
  HWY_INLINE float operator()(size_t j) const {
    const int32_t q = internal::LoadCode(F::kFormat, b.codes, b.first + j);
    return LoadOne<T>(b.lp, j) + internal::RefDecodeCode(F::kFormat, b.sb, uint32_t(q));
  }
};

template <class F, DType T>
HWY_INLINE BlockScale DaeStage1(const DaeBlock& blk, size_t len, internal::ScaleIo sio,
                                float* HWY_RESTRICT tile) {
  if (blk.sb & 0x80000000u) return BlockScale{kInfBits, 0.0f, 0.0f};
  const size_t N = hn::Lanes(DF());
  const DaeSum<F, T> sum{blk, hn::Set(DF(), FloatOf(blk.sb))};
  const DaeSum1<F, T> sum1{blk};
  if (len > kTile / 2) return ScaleOf<F>(MaxAbsBits(len, sum, sum1), sio);
  len = len < kTile / 2 ? len : kTile / 2;  // (tells the compiler the tile bound)
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
  for (uint32_t t = uint32_t(i), e = uint32_t(len); t < e; i = ++t) {
    tile[i] = sum1(i);
    const uint32_t bits = BitsOf(tile[i]) & 0x7FFFFFFFu;
    m = bits > m ? bits : m;
  }
  return ScaleOf<F>(m, sio);
}

template <class F, DType T, bool kOpt>
HWY_INLINE void DaeStage2(const BlockScale& bs, const DaeBlock& blk, size_t len,
                          const float* HWY_RESTRICT tile, internal::ScaleIo sio,
                          uint8_t* scale_out, uint8_t* codes_out, const Opt* o) {
  if (bs.m >= kInfBits) {
    const SumCtx ctx{F::kFormat, T, blk.lp, blk.sb, blk.codes, blk.first};
    internal::RefEncodeBlock(F::kFormat, sio, &GetSum, &ctx, len,
                             o ? o->rnd : internal::Rounding{}, blk.first, scale_out, codes_out,
                             o ? o->stats : nullptr);
    return;
  }
  if (len > kTile / 2) {
    const DaeSum<F, T> sum{blk, hn::Set(DF(), FloatOf(blk.sb))};
    const DaeSum1<F, T> sum1{blk};
    FinishBlock<F, kOpt>(bs, len, sum, sum1, sio, scale_out, codes_out, blk.first, o);
    return;
  }
  len = len < kTile / 2 ? len : kTile / 2;  // (tells the compiler the tile bound)
  FinishBlock<F, kOpt>(
      bs, len, [tile](size_t i) HWY_ATTR { return hn::Load(DF(), tile + i); },
      [tile](size_t j) { return tile[j]; }, sio, scale_out, codes_out, blk.first, o);
}

// A block through the scalar reference (flagged input, or NaN/Inf among its sums).
template <class F, DType T, size_t kB>
HWY_INLINE void DaeReference(const DaeBlock& blk, internal::ScaleIo sio, uint8_t* scale_out,
                             uint8_t* codes_out) {
  const SumCtx ctx{F::kFormat, T, blk.lp, blk.sb, blk.codes, blk.first};
  internal::RefEncodeBlock(F::kFormat, sio, &GetSum, &ctx, kB, internal::Rounding{}, blk.first,
                           scale_out, codes_out, nullptr);
}

// Quantizes an unflagged block whose kB sums are the vectors x, with scale bs.
template <class F, DType T, size_t kB>
HWY_INLINE void DaeFinishInRegisters(const BlockScale& bs, const DaeBlock& blk, const VF* x,
                                     internal::ScaleIo sio, uint8_t* scale_out, uint8_t* codes_out) {
  constexpr size_t N = hn::MaxLanes(DF());
  if (bs.m >= kInfBits) return DaeReference<F, T, kB>(blk, sio, scale_out, codes_out);
  FinishBlock<F, false>(
      bs, kB, [x](size_t i) HWY_ATTR { return x[i / N]; },
      [x](size_t j) HWY_ATTR { return hn::ExtractLane(x[j / N], j % N); }, sio, scale_out,
      codes_out, blk.first, nullptr);
}

// A whole block of kB <= 8 vectors with its sums kept in registers (no tile, no pipelining in
// the code: the out-of-order core overlaps one block's reduction and divisions with the next
// block's loads). Plain nearest-even path only.
template <class F, DType T, size_t kB>
HWY_INLINE void DaeBlockInRegisters(const DaeBlock& blk, internal::ScaleIo sio, uint8_t* scale_out,
                                    uint8_t* codes_out) {
  constexpr size_t N = hn::MaxLanes(DF());
  constexpr size_t K = kB / N;
  if (blk.sb & 0x80000000u) return DaeReference<F, T, kB>(blk, sio, scale_out, codes_out);
  const DaeSum<F, T> sum{blk, hn::Set(DF(), FloatOf(blk.sb))};
  VF x[K];
  VI m0 = hn::Zero(DI()), m1 = hn::Zero(DI());
  for (size_t k = 0; k < K; k += 2) {
    x[k] = sum(k * N);
    x[k + 1] = sum((k + 1) * N);
    m0 = hn::Max(m0, AbsBits(x[k]));
    m1 = hn::Max(m1, AbsBits(x[k + 1]));
  }
  DaeFinishInRegisters<F, T, kB>(ScaleOf<F>(MaxLane(hn::Max(m0, m1)), sio), blk, x, sio,
                                 scale_out, codes_out);
}

#if EQUARX_AVX512
// AVX-512 (32 vector registers): two blocks of kB <= 8 vectors each, their sums in registers
// and their two maxima reduced across lanes together (each shuffle-and-max level serves both
// blocks, half the shuffles of two single reductions). The values, the maxima and every later
// step are those of DaeBlockInRegisters, so the bits are too.
HWY_INLINE void MaxLanesOfPair(VI a, VI b, uint32_t* ma, uint32_t* mb) {
  // 128-bit lanes [a0 a1 a2 a3], [b0 b1 b2 b3] -> [a0|a2, a1|a3, b0|b2, b1|b3] (| = max) ...
  __m512i t = _mm512_max_epi32(_mm512_shuffle_i32x4(a.raw, b.raw, 0x44),
                               _mm512_shuffle_i32x4(a.raw, b.raw, 0xEE));
  t = _mm512_max_epi32(t, _mm512_shuffle_i32x4(t, t, 0xB1));  // ... a's in lanes 0-1, b's in 2-3
  t = _mm512_max_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_BADC));
  t = _mm512_max_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));
  *ma = uint32_t(_mm_cvtsi128_si32(_mm512_castsi512_si128(t)));
  *mb = uint32_t(_mm_cvtsi128_si32(_mm512_extracti32x4_epi32(t, 2)));
}

template <class F, DType T, size_t kB>
HWY_INLINE void DaeBlockPairInRegisters(const DaeBlock& b0, const DaeBlock& b1,
                                        internal::ScaleIo sio, uint8_t* scale_out0,
                                        uint8_t* scale_out1, uint8_t* codes_out) {
  if ((b0.sb | b1.sb) & 0x80000000u) {  // a flagged input block: each on its own
    DaeBlockInRegisters<F, T, kB>(b0, sio, scale_out0, codes_out);
    DaeBlockInRegisters<F, T, kB>(b1, sio, scale_out1, codes_out);
    return;
  }
  constexpr size_t N = hn::MaxLanes(DF());
  constexpr size_t K = kB / N;
  const DaeSum<F, T> sum0{b0, hn::Set(DF(), FloatOf(b0.sb))};
  const DaeSum<F, T> sum1{b1, hn::Set(DF(), FloatOf(b1.sb))};
  VF x0[K], x1[K];
  VI m0 = hn::Zero(DI()), m1 = hn::Zero(DI());
  for (size_t k = 0; k < K; ++k) {
    x0[k] = sum0(k * N);
    x1[k] = sum1(k * N);
    m0 = hn::Max(m0, AbsBits(x0[k]));
    m1 = hn::Max(m1, AbsBits(x1[k]));
  }
  uint32_t ma, mb;
  MaxLanesOfPair(m0, m1, &ma, &mb);
  DaeFinishInRegisters<F, T, kB>(ScaleOf<F>(ma, sio), b0, x0, sio, scale_out0, codes_out);
  DaeFinishInRegisters<F, T, kB>(ScaleOf<F>(mb, sio), b1, x1, sio, scale_out1, codes_out);
}
#endif

template <class F, DType T, size_t kB, bool kOpt>
void DecodeAccumulateEncodeT(const uint8_t* wire_in, size_t n, size_t B, internal::ScaleIo sio,
                             const void* local, uint8_t* wire_out, const Opt* o) {
  const size_t nb = (n + B - 1) / B;
  const size_t sbytes = sio.bytes;
  const uint8_t* codes_in = wire_in + internal::CodesOffset(sio, nb, n);
  uint8_t* codes_out = wire_out + internal::CodesOffset(sio, nb, n);
  HWY_ALIGN float tile[kTile];  // two halves: block b uses half b % 2
  auto block = [&](size_t b) {
    return DaeBlock{codes_in, b * B, Advance(T, local, b * B),
                    internal::LoadScaleBits(wire_in + sbytes * b, sio)};
  };
  const size_t full = n / B;
  const size_t L = kB != 0 ? kB : B;
  constexpr bool kInRegisters = !kOpt && kB != 0 && kB % (2 * hn::MaxLanes(DF())) == 0 &&
                                kB <= 8 * hn::MaxLanes(DF());
  if constexpr (kInRegisters) {
    size_t b = 0;
#if EQUARX_AVX512
    for (; b + 2 <= full; b += 2)  // two at a time: B = 64 and 128 on AVX-512
      DaeBlockPairInRegisters<F, T, kB>(block(b), block(b + 1), sio, wire_out + sbytes * b,
                                        wire_out + sbytes * (b + 1), codes_out);
#endif
    for (; b < full; ++b)
      DaeBlockInRegisters<F, T, kB>(block(b), sio, wire_out + sbytes * b, codes_out);
  } else if (full > 0) {
    DaeBlock cur_blk = block(0);
    BlockScale cur = DaeStage1<F, T>(cur_blk, L, sio, tile);
    for (size_t b = 0; b < full; ++b) {
      DaeBlock next_blk{};
      BlockScale next{};
      if (b + 1 < full) {
        next_blk = block(b + 1);
        next = DaeStage1<F, T>(next_blk, L, sio, tile + ((b + 1) & 1) * (kTile / 2));
      }
      DaeStage2<F, T, kOpt>(cur, cur_blk, L, tile + (b & 1) * (kTile / 2), sio,
                            wire_out + sbytes * b, codes_out, o);
      cur = next;
      cur_blk = next_blk;
    }
  }
  if (full < nb) {
    const size_t len = n - full * B;
    const DaeBlock blk = block(full);
    DaeStage2<F, T, kOpt>(DaeStage1<F, T>(blk, len, sio, tile), blk, len, tile, sio,
                          wire_out + sbytes * full, codes_out, o);
  }
}

}  // namespace

// ---- Dispatch helpers for the format units --------------------------------------------------

// KERNEL<F, T, kB, kOpt>(args...) for the runtime dtype; kB = 64/128 (constant trip counts) for
// the plain f32/bf16 path of formats with F::kFixedBlocks, else 0.
#define EQUARX_BLOCK_KERNEL(KERNEL, F, t, block, opt, ...)                                  \
  do {                                                                                      \
    if (opt) {                                                                              \
      switch (t) {                                                                          \
        case DType::kFloat32: return KERNEL<F, DType::kFloat32, 0, true>(__VA_ARGS__);      \
        case DType::kBFloat16: return KERNEL<F, DType::kBFloat16, 0, true>(__VA_ARGS__);    \
        case DType::kFloat16: return KERNEL<F, DType::kFloat16, 0, true>(__VA_ARGS__);      \
      }                                                                                     \
    }                                                                                       \
    switch (t) {                                                                            \
      case DType::kFloat32:                                                                 \
        if (F::kFixedBlocks && block == 64) return KERNEL<F, DType::kFloat32, 64, false>(__VA_ARGS__);   \
        if (F::kFixedBlocks && block == 128) return KERNEL<F, DType::kFloat32, 128, false>(__VA_ARGS__); \
        return KERNEL<F, DType::kFloat32, 0, false>(__VA_ARGS__);                           \
      case DType::kBFloat16:                                                                \
        if (F::kFixedBlocks && block == 64) return KERNEL<F, DType::kBFloat16, 64, false>(__VA_ARGS__);  \
        if (F::kFixedBlocks && block == 128) return KERNEL<F, DType::kBFloat16, 128, false>(__VA_ARGS__); \
        return KERNEL<F, DType::kBFloat16, 0, false>(__VA_ARGS__);                          \
      case DType::kFloat16: return KERNEL<F, DType::kFloat16, 0, false>(__VA_ARGS__);       \
    }                                                                                       \
  } while (0)

#define EQUARX_DECACC_KERNEL(F, t, block, ...)                                              \
  do {                                                                                      \
    switch (t) {                                                                            \
      case DType::kFloat32:                                                                 \
        if (F::kFixedBlocks && block == 64) return DecodeAccumulateT<F, DType::kFloat32, 64>(__VA_ARGS__);   \
        if (F::kFixedBlocks && block == 128) return DecodeAccumulateT<F, DType::kFloat32, 128>(__VA_ARGS__); \
        return DecodeAccumulateT<F, DType::kFloat32, 0>(__VA_ARGS__);                       \
      case DType::kBFloat16:                                                                \
        if (F::kFixedBlocks && block == 128) return DecodeAccumulateT<F, DType::kBFloat16, 128>(__VA_ARGS__); \
        return DecodeAccumulateT<F, DType::kBFloat16, 0>(__VA_ARGS__);                      \
      case DType::kFloat16: return DecodeAccumulateT<F, DType::kFloat16, 0>(__VA_ARGS__);   \
    }                                                                                       \
  } while (0)

namespace {

// The four kernels of a block format F, with the runtime choices every format shares: the
// optional path (stochastic rounding, telemetry) and the fixed block sizes. A format unit
// only defines its traits struct and exposes these through EQUARX_BLOCK_FORMAT_IMPLS.
template <class F>
struct FormatKernels {
  static void Encode(const WireSpec& spec, DType t, const void* src, size_t n, uint8_t* wire,
                     EncodeStats* stats) {
    const Opt o{internal::RoundingOf(spec), stats};
    const bool opt = o.rnd.stochastic || stats != nullptr;
    const size_t B = spec.block;
    if (spec.scale == kScaleTwoLevel) {
      if (opt || !TwoLevelSimd(B)) return ref::Encode(spec, t, src, n, wire, stats);
      return TwoLevelKernels<F>::Encode(t, src, n, B, internal::ScaleIoOf(spec), wire);
    }
    EQUARX_BLOCK_KERNEL(EncodeT, F, t, B, opt, src, n, B, internal::ScaleIoOf(spec), wire,
                        opt ? &o : nullptr);
  }
  static void Decode(const WireSpec& spec, const uint8_t* wire, size_t n, DType t, void* dst) {
    if (spec.scale == kScaleTwoLevel) {
      if (!TwoLevelSimd(spec.block)) return ref::Decode(spec, wire, n, t, dst);
      return TwoLevelDecodeT<F>(wire, n, spec.block, internal::ScaleIoOf(spec), t, dst);
    }
    DecodeT<F>(wire, n, spec.block, internal::ScaleIoOf(spec), t, dst);
  }
  static void DecodeAccumulate(const WireSpec& spec, const uint8_t* wire, size_t n, DType t,
                               const void* local, float* out) {
    const size_t B = spec.block;
    if (spec.scale == kScaleTwoLevel) {
      if (!TwoLevelSimd(B)) return ref::DecodeAccumulate(spec, wire, n, t, local, out);
      return TwoLevelKernels<F>::DecodeAccumulate(t, wire, n, B, internal::ScaleIoOf(spec), local,
                                                    out);
    }
    EQUARX_DECACC_KERNEL(F, t, B, wire, n, B, internal::ScaleIoOf(spec), local, out);
  }
  static void DecodeAccumulateEncode(const WireSpec& spec, const uint8_t* wire_in, size_t n,
                                     DType t, const void* local, uint8_t* wire_out,
                                     EncodeStats* stats) {
    const Opt o{internal::RoundingOf(spec), stats};
    const bool opt = o.rnd.stochastic || stats != nullptr;
    const size_t B = spec.block;
    if (spec.scale == kScaleTwoLevel) {
      if (opt || !TwoLevelSimd(B))
        return ref::DecodeAccumulateEncode(spec, wire_in, n, t, local, wire_out, stats);
      return TwoLevelKernels<F>::DecodeAccumulateEncode(t, wire_in, n, B, internal::ScaleIoOf(spec),
                                                          local, wire_out);
    }
    EQUARX_BLOCK_KERNEL(DecodeAccumulateEncodeT, F, t, B, opt, wire_in, n, B,
                        internal::ScaleIoOf(spec), local, wire_out, opt ? &o : nullptr);
  }
};

}  // namespace

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard

// ---- What each format unit writes once (outside the per-target guard) -----------------------
#ifndef EQUARX_CODEC_BLOCK_FORMAT_MACROS_
#define EQUARX_CODEC_BLOCK_FORMAT_MACROS_

// Inside HWY_NAMESPACE: NAME##EncodeImpl etc., each running FormatKernels<FMT(spec)>, where
// FMT(spec) is a traits type, or a ternary choosing between the kernels of two (fp8).
#define EQUARX_BLOCK_FORMAT_IMPLS(NAME, KERNELS)                                                  \
  void NAME##EncodeImpl(const WireSpec& spec, DType t, const void* src, size_t n, uint8_t* wire, \
                        EncodeStats* stats) {                                                     \
    KERNELS(spec, Encode)(spec, t, src, n, wire, stats);                                          \
  }                                                                                               \
  void NAME##DecodeImpl(const WireSpec& spec, const uint8_t* wire, size_t n, DType t, void* dst) { \
    KERNELS(spec, Decode)(spec, wire, n, t, dst);                                                 \
  }                                                                                               \
  void NAME##DecodeAccumulateImpl(const WireSpec& spec, const uint8_t* wire, size_t n, DType t,  \
                                  const void* local, float* out) {                                \
    KERNELS(spec, DecodeAccumulate)(spec, wire, n, t, local, out);                                \
  }                                                                                               \
  void NAME##DecodeAccumulateEncodeImpl(const WireSpec& spec, const uint8_t* wire_in, size_t n,  \
                                        DType t, const void* local, uint8_t* wire_out,            \
                                        EncodeStats* stats) {                                     \
    KERNELS(spec, DecodeAccumulateEncode)(spec, wire_in, n, t, local, wire_out, stats);           \
  }

// In the HWY_ONCE part: the dispatch tables and the unit's row internal::k##NAME##Kernels of
// the kernel table that dispatch.cc reads. Where USE_REFERENCE(spec) is true the scalar
// reference runs instead (int4's odd blocks).
#define EQUARX_BLOCK_FORMAT_EXPORTS(NAME, USE_REFERENCE)                                          \
  HWY_EXPORT(NAME##EncodeImpl);                                                                   \
  HWY_EXPORT(NAME##DecodeImpl);                                                                   \
  HWY_EXPORT(NAME##DecodeAccumulateImpl);                                                         \
  HWY_EXPORT(NAME##DecodeAccumulateEncodeImpl);                                                   \
  namespace internal {                                                                            \
  const BlockKernels k##NAME##Kernels = {                                                         \
      [](const WireSpec& spec, DType t, const void* src, size_t n, uint8_t* wire,                 \
         EncodeStats* stats) {                                                                    \
        if (USE_REFERENCE(spec)) return ref::Encode(spec, t, src, n, wire, stats);               \
        HWY_DYNAMIC_DISPATCH(NAME##EncodeImpl)(spec, t, src, n, wire, stats);                     \
      },                                                                                          \
      [](const WireSpec& spec, const uint8_t* wire, size_t n, DType t, void* dst) {               \
        if (USE_REFERENCE(spec)) return ref::Decode(spec, wire, n, t, dst);                      \
        HWY_DYNAMIC_DISPATCH(NAME##DecodeImpl)(spec, wire, n, t, dst);                            \
      },                                                                                          \
      [](const WireSpec& spec, const uint8_t* wire, size_t n, DType t, const void* local,         \
         float* out) {                                                                            \
        if (USE_REFERENCE(spec)) return ref::DecodeAccumulate(spec, wire, n, t, local, out);     \
        HWY_DYNAMIC_DISPATCH(NAME##DecodeAccumulateImpl)(spec, wire, n, t, local, out);           \
      },                                                                                          \
      [](const WireSpec& spec, const uint8_t* wire_in, size_t n, DType t, const void* local,      \
         uint8_t* wire_out, EncodeStats* stats) {                                                 \
        if (USE_REFERENCE(spec))                                                                  \
          return ref::DecodeAccumulateEncode(spec, wire_in, n, t, local, wire_out, stats);       \
        HWY_DYNAMIC_DISPATCH(NAME##DecodeAccumulateEncodeImpl)(spec, wire_in, n, t, local,        \
                                                               wire_out, stats);                  \
      }};                                                                                         \
  }  // namespace internal

#endif  // EQUARX_CODEC_BLOCK_FORMAT_MACROS_
