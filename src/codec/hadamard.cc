// equarx codec — SIMD kernels of the randomized Walsh-Hadamard rotation (codec.h, "Rotation").
//
// Highway foreach_target unit (pattern of raw.cc). A rotation block is done piece by piece
// (power-of-two pieces, largest first); a piece of P >= N lanes runs vectorised:
//   forward  pass 1, per vector: load (widening bf16/f16 exactly), flip the signs whose bits
//            are set (XOR of the sign bit; AVX2/SSE4 look the N sign masks up in a table),
//            multiply by 2^-floor(k/2), then the butterfly stages h < N inside the register:
//            partner s = the lane ^ h (a fixed shuffle per stage), x <- x * (+-1) + s with -1
//            on the upper lanes: one rounding of an exact product, so a + b on the lower lane
//            and a - b on the upper one, the reference's operations on the reference's
//            operands (the edge-value test data holds signed zeros and exact cancellations);
//            passes 2.., per stage h = N .. P/2: (a, b) <- (a + b, a - b) vector by vector.
//   inverse  the same scale (2^-ceil(k/2)) and stages, then per vector the signs and the
//            conversion to the destination type in the register (raw.cc's exact converters,
//            convert_simd-inl.h), stored straight to the destination.
// Full blocks of a power of two from N to 64 elements (the rotation of two-level scales, 16,
// and of the default block, 64) take a loop of their own (WithSmallBlocks): one piece in
// registers and one sign word per block, with none of the general loop's per-block work.
// Guarded (spec.guard, codec.h): the forward pass keeps the largest |input| bits of each block
// in a vector and, where a lane reaches 2^100 (or Inf/NaN), writes the block as NaN; the
// inverse keeps the largest |result| bits of the call and reports Inf/NaN. One max per vector
// and one compare per block (forward) or call (inverse); no reduction across lanes.
// Every output element goes through the same adds in the same order as in
// reference_rotation.cc, so every target is bitwise equal to it. Blocks with a piece shorter
// than a vector (the tensor's tail, odd block sizes) are handed to the reference whole.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "codec/codec.h"
#include "codec/internal.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "codec/hadamard.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "codec/block_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace equarx::codec {
namespace HWY_NAMESPACE {
namespace {

using internal::kMaxRotBlock;

// Whether every power-of-two piece of a block of length len has at least N elements.
bool AllPiecesVectorised(size_t len, size_t n_lanes) { return (len & (n_lanes - 1)) == 0; }

// The power-of-two pieces of a block of length len (< 2^13), largest first, as log2 sizes.
// Computed once per call for the full block, so that small blocks (16 with two-level scales:
// one or two vectors) do not pay a scan of every possible piece size per block.
struct Pieces {
  int log2[13];
  int count = 0;
  explicit Pieces(size_t len) {
    for (int k = 12; k >= 0; --k)
      if (len & (size_t(1) << k)) log2[count++] = k;
  }
};

// The lambdas that load, sign and store a piece's vectors are forced inline: left to the
// compiler, the forward one (which hashes the block's sign word) was an out-of-line call per
// vector, which at block 16 (one or two vectors per block) halved the forward transform's speed.
#define EQUARX_LAMBDA_INLINE HWY_ATTR __attribute__((always_inline))

// 2^-e as an f32 (0 <= e < 64), exactly.
float PowTwoNeg(int e) { return FloatOf(uint32_t(127 - e) << 23); }

// Lanes of a vector (a compile-time bound: every target here has fixed-width vectors).
constexpr size_t kN = hn::MaxLanes(DF());

// Sign masks of N = 4 or 8 lanes, indexed by the N sign bits: entry i, lane l holds the f32
// sign bit when bit l of i is set. One load per vector instead of a broadcast, a bit test and
// a select (the AVX-512 target keeps the bit test: its masks make that three cheap ops).
template <size_t N>
struct SignTable {
  alignas(64) uint32_t mask[size_t(1) << N][N];
  constexpr SignTable() : mask{} {
    for (size_t i = 0; i < (size_t(1) << N); ++i)
      for (size_t l = 0; l < N; ++l) mask[i][l] = ((i >> l) & 1) ? 0x80000000u : 0u;
  }
};
constexpr bool kSignTable = kN == 4 || kN == 8;
alignas(64) constexpr SignTable<kSignTable ? kN : 1> kSigns{};

// Per-call constants of the in-register butterfly stages h = 1, 2, 4, ... < N.
struct Stages {
  VF pm[4];  // per stage: +1 on the lower partner's lanes, -1 on the upper partner's
  VU lane_bit;  // 1 << lane
  VF sign_bit;
  Stages()
      : lane_bit(hn::Shl(hn::Set(DU(), 1u), hn::Iota(DU(), 0))),
        sign_bit(hn::BitCast(DF(), hn::Set(DU(), 0x80000000u))) {
    const DF df;
    const DI di;
    const VI ilane = hn::Iota(di, 0);
    for (size_t i = 0; i < 4; ++i) {
      const auto upper = hn::RebindMask(df, hn::TestBit(ilane, hn::Set(di, int32_t(1) << i)));
      pm[i] = hn::IfThenElse(upper, hn::Set(df, -1.0f), hn::Set(df, 1.0f));
    }
  }
#if HWY_TARGET != HWY_SCALAR
  // The lane-order partner of every lane at stage I (lane ^ 2^I): fixed shuffles.
  template <int I>
  static HWY_INLINE VF Partner(VF x) {
    if constexpr (I == 0) return hn::Shuffle2301(x);
    else if constexpr (I == 1) return hn::Shuffle1032(x);
    else if constexpr (I == 2 && kN == 16) return hn::SwapAdjacentBlocks(x);
    else return hn::ConcatLowerUpper(DF(), x, x);  // swaps the vector's halves
  }
  template <int I>
  HWY_INLINE VF Stage(VF x) const {
    // x * (+-1) + partner, one rounding of an exact product: on the lower lane a + b, on the
    // upper lane a - b (a the lower partner), bitwise the reference's a + b and a - b.
    return hn::MulAdd(x, pm[I], Partner<I>(x));
  }
#endif
  // Stages h < N of one vector (pieces here have P >= N elements).
  HWY_INLINE VF Apply(VF x) const {
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kN >= 2) x = Stage<0>(x);
    if constexpr (kN >= 4) x = Stage<1>(x);
    if constexpr (kN >= 8) x = Stage<2>(x);
    if constexpr (kN >= 16) x = Stage<3>(x);
    static_assert(kN <= 16, "in-register stages up to 16 lanes");
#endif
    return x;
  }
  // The sign-flip vector (sign bit set where the element's sign bit in `bits` is 1) of the N
  // elements whose sign bits are the low bits of `bits`.
  HWY_INLINE VF Signs(uint64_t bits) const {
    if constexpr (kSignTable) {
      return hn::BitCast(DF(), hn::Load(DU(), kSigns.mask[bits & ((uint64_t(1) << kN) - 1)]));
    } else {
      // A bit test per lane: no variable shift, which SSE4 lacks.
      const auto flip = hn::TestBit(hn::Set(DU(), uint32_t(bits)), lane_bit);
      return hn::IfThenElseZero(hn::RebindMask(DF(), flip), sign_bit);
    }
  }
};

// The sign words of one block: word c holds the sign bits of elements 64c .. 64c + 63.
// Blocks of at most 64 elements take their one word from a batch: the words of kSignBatch
// consecutive blocks are hashed in one loop ahead of their blocks, which the compiler
// vectorizes, instead of one hash in front of each block's loads. Longer blocks hash their
// words when the block starts. Either way the vector loop reads its bits without a branch.
constexpr size_t kSignBatch = 64;
struct BlockSigns {
  uint64_t batch[kSignBatch];
  uint64_t batch_first = 0;  // batch[i] is word 0 of block batch_first + i, for i < batch_count
  uint64_t batch_count = 0;
  uint64_t words[kMaxRotBlock / 64];
  // Loads the words of block b, of len elements (of a rotation of block size B).
  HWY_INLINE void Start(uint64_t key, uint64_t b, size_t B, size_t len) {
    if (B > 64) {
      for (size_t c = 0; c * 64 < len; ++c) words[c] = internal::SignWord(key, b, uint32_t(c));
      return;
    }
    if (b - batch_first >= batch_count) {
      for (size_t i = 0; i < kSignBatch; ++i) batch[i] = internal::SignWord(key, b + i, 0);
      batch_first = b;
      batch_count = kSignBatch;
    }
    words[0] = batch[b - batch_first];
  }
  // The sign bits of elements j.. of the block (j a multiple of N).
  HWY_INLINE uint64_t Bits(size_t j) const { return words[j / 64] >> (j % 64); }
};

// Stages h = N .. P/2 across vectors, in place on x[0 .. P) (pieces too long for registers).
HWY_INLINE void CrossStages(float* x, size_t p) {
  const DF df;
  const size_t N = hn::Lanes(df);
  for (size_t h = N; h < p; h *= 2)
    for (size_t i = 0; i < p; i += 2 * h)
      for (size_t j = i; j < i + h; j += N) {
        const VF a = hn::LoadU(df, x + j), b = hn::LoadU(df, x + j + h);
        hn::StoreU(hn::Add(a, b), df, x + j);
        hn::StoreU(hn::Sub(a, b), df, x + j + h);
      }
}

// The butterfly of a piece of exactly M vectors (M = P / N, a power of two), held in
// registers: M is a compile-time constant so that the array lives in registers.
template <size_t M, class In, class Out>
HWY_INLINE void PieceInRegisters(const Stages& st, In in, Out out) {
  VF v[M];
#pragma GCC unroll 16
  for (size_t i = 0; i < M; ++i) v[i] = st.Apply(in(i));
#pragma GCC unroll 16
  for (size_t h = 1; h < M; h *= 2)
#pragma GCC unroll 16
    for (size_t j = 0; j < M; ++j) {
      if (j & h) continue;  // j is the lower partner; j | h < M (M a power of two)
      const VF a = v[j], b = v[j | h];
      v[j] = hn::Add(a, b);
      v[j | h] = hn::Sub(a, b);
    }
#pragma GCC unroll 16
  for (size_t i = 0; i < M; ++i) out(i, v[i]);
}

// The butterfly of one piece of P >= N elements: vector i comes from in(i) (already signed
// and scaled), goes through the in-register stages and the cross-vector stages, and leaves
// through out(i, v). Pieces of up to 16 vectors never touch memory in between (the compiler
// may spill some of 16 on 16-register targets); longer ones go through `scratch` (P floats).
template <class In, class Out>
HWY_INLINE void Piece(const Stages& st, size_t p, In in, Out out, float* scratch) {
  const DF df;
  const size_t N = hn::Lanes(df), m = p / N;
#if !HWY_HAVE_SCALABLE
  switch (m) {
    case 1: return PieceInRegisters<1>(st, in, out);
    case 2: return PieceInRegisters<2>(st, in, out);
    case 4: return PieceInRegisters<4>(st, in, out);
    case 8: return PieceInRegisters<8>(st, in, out);
    case 16: return PieceInRegisters<16>(st, in, out);
    default: break;
  }
#endif
  for (size_t i = 0; i < m; ++i) hn::StoreU(st.Apply(in(i)), df, scratch + i * N);
  CrossStages(scratch, p);
  for (size_t i = 0; i < m; ++i) out(i, hn::LoadU(df, scratch + i * N));
}

// Bits of |x| from which SafeToRotate refuses x: 2^100 (Inf and NaN lie above it).
constexpr uint32_t kUnsafeBits = 0x71800000u;

// Whether any lane of m (abs bits, so non-negative) is at least `bits`: one compare, no
// reduction across lanes.
HWY_INLINE bool AnyAtLeast(VI m, uint32_t bits) {
  return !hn::AllFalse(DI(), hn::Gt(m, hn::Set(DI(), int32_t(bits - 1))));
}

// Vector i of a forward piece: the N elements from element `at` of src, their sign bits the
// low bits of `bits` flipped, times `scale`; the guard's max of their |input| bits into *m.
template <DType T, bool kGuard>
HWY_INLINE VF ForwardIn(const Stages& st, uint64_t bits, const void* src, size_t at, VF scale, VI* m) {
  const VF x = LoadF<T>(src, at);
  if constexpr (kGuard) *m = hn::Max(*m, AbsBits(x));
  return hn::Mul(hn::Xor(x, st.Signs(bits)), scale);
}

// Vector v of an inverse piece out to element `at` of dst: the guard's max of its |result|
// bits into *m, its sign bits the low bits of `bits` flipped, converted to T.
template <DType T, bool kGuard>
HWY_INLINE void InverseOut(const Stages& st, uint64_t bits, VF v, void* dst, size_t at, VI* m) {
  if constexpr (kGuard) *m = hn::Max(*m, AbsBits(v));
  StoreF<T>(hn::Xor(v, st.Signs(bits)), dst, at);
}

// Blocks of B = M * N <= 64 elements (every power of two from N to 64 where M <= 16: the
// rotation of two-level scales, 16, and the default block, 64, among them) go through a loop
// of their own: each is one piece held in registers with one sign word, and the words are
// hashed kSignBatch blocks at a time. With the pieces, the sign-word bookkeeping and the
// dispatch of the general loop decided once per call, a block of one or two vectors runs
// without the per-block work that otherwise costs as much as its transform.
// small(m_tag) is called with std::integral_constant<size_t, M>; returns the elements it
// covers (every full block), 0 where B does not qualify.
template <class Small>
HWY_INLINE size_t WithSmallBlocks(size_t B, size_t n, Small small) {
#if !HWY_HAVE_SCALABLE
  if (B > 64 || B < kN || (B & (B - 1)) != 0) return 0;
  switch (B / kN) {
    case 1: small(std::integral_constant<size_t, 1>()); break;
    case 2: small(std::integral_constant<size_t, 2>()); break;
    case 4: small(std::integral_constant<size_t, 4>()); break;
    case 8: small(std::integral_constant<size_t, 8>()); break;
    case 16: small(std::integral_constant<size_t, 16>()); break;
    default: return 0;
  }
  return n / B * B;
#else
  return 0;
#endif
}

// block(j, word) for each of the nfull blocks j from block b0, with its sign word.
template <class Block>
HWY_INLINE void ForSmallBlocks(uint64_t key, uint64_t b0, size_t nfull, Block block) {
  uint64_t words[kSignBatch];
  for (size_t j0 = 0; j0 < nfull; j0 += kSignBatch) {
    for (size_t i = 0; i < kSignBatch; ++i) words[i] = internal::SignWord(key, b0 + j0 + i, 0);
    const size_t nj = std::min(kSignBatch, nfull - j0);
    for (size_t j = 0; j < nj; ++j) block(j0 + j, words[j]);
  }
}

// fn(tag) with tag a std::integral_constant of the runtime dtype t: the transforms are
// templates on their dtype.
template <class Fn>
HWY_INLINE bool WithDType(DType t, Fn fn) {
  switch (t) {
    case DType::kFloat32: return fn(std::integral_constant<DType, DType::kFloat32>());
    case DType::kBFloat16: return fn(std::integral_constant<DType, DType::kBFloat16>());
    case DType::kFloat16: return fn(std::integral_constant<DType, DType::kFloat16>());
  }
  return false;
}

template <DType T, bool kGuard>
bool ForwardT(const RotationSpec& spec, const void* src, size_t n, uint64_t offset, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df), B = spec.block;
  const Stages st;
  const uint64_t key = internal::RotationKey(spec.seed);
  const Pieces full(std::min(B, kMaxRotBlock));
  BlockSigns signs;
  HWY_ALIGN float scratch[kMaxRotBlock];
  bool poisoned = false;
  const size_t small = WithSmallBlocks(B, n, [&](auto m_tag) EQUARX_LAMBDA_INLINE {
    constexpr size_t M = decltype(m_tag)::value;
    const VF scale = hn::Set(df, PowTwoNeg(int(hwy::FloorLog2(B)) / 2));
    ForSmallBlocks(key, offset / B, n / B, [&](size_t j, uint64_t word) EQUARX_LAMBDA_INLINE {
      VI m = hn::Zero(DI());
      const size_t at = j * B;
      PieceInRegisters<M>(
          st,
          [&](size_t i) EQUARX_LAMBDA_INLINE {
            return ForwardIn<T, kGuard>(st, word >> (i * kN), src, at + i * kN, scale, &m);
          },
          [&](size_t i, VF v) EQUARX_LAMBDA_INLINE { hn::StoreU(v, df, out + at + i * kN); });
      if constexpr (kGuard) {
        if (AnyAtLeast(m, kUnsafeBits)) {
          internal::PoisonBlock(out + at, B);
          poisoned = true;
        }
      }
    });
  });
  uint64_t b = (offset + small) / B;  // the block index, counted up (no division per block)
  for (size_t s = small; s < n; s += B, ++b) {
    const size_t len = std::min(B, n - s);
    if (!AllPiecesVectorised(len, N) || len > kMaxRotBlock) {
      poisoned |= ref::RotateForward(spec, T, static_cast<const uint8_t*>(src) + s * DTypeSize(T),
                                     len, offset + s, out + s);
      continue;
    }
    signs.Start(key, b, B, len);
    VI m = hn::Zero(DI());  // guard: the block's largest |input| bits
    size_t first = 0;
    const Pieces pieces = len == B ? full : Pieces(len);
    for (int pi = 0; pi < pieces.count; ++pi) {
      const int k = pieces.log2[pi];
      const size_t p = size_t(1) << k;
      const VF scale = hn::Set(df, PowTwoNeg(k / 2));
      const size_t at = s + first;
      auto in = [&](size_t i) EQUARX_LAMBDA_INLINE {
        return ForwardIn<T, kGuard>(st, signs.Bits(first + i * N), src, at + i * N, scale, &m);
      };
      auto store = [&](size_t i, VF v) EQUARX_LAMBDA_INLINE { hn::StoreU(v, df, out + at + i * N); };
      Piece(st, p, in, store, scratch);
      first += p;
    }
    if constexpr (kGuard) {
      // Every input of the block was read (each piece before it was written, so in place too).
      if (AnyAtLeast(m, kUnsafeBits)) {
        internal::PoisonBlock(out + s, len);
        poisoned = true;
      }
    }
  }
  return poisoned;
}

bool RotateForwardImpl(const RotationSpec& spec, DType t, const void* src, size_t n,
                       uint64_t offset, float* out) {
  return WithDType(t, [&](auto tag) HWY_ATTR {
    constexpr DType T = decltype(tag)::value;
    return spec.guard ? ForwardT<T, true>(spec, src, n, offset, out)
                      : ForwardT<T, false>(spec, src, n, offset, out);
  });
}

template <DType T, bool kGuard>
bool InverseT(const RotationSpec& spec, const float* in, size_t n, uint64_t offset, void* dst) {
  const DF df;
  const size_t N = hn::Lanes(df), B = spec.block;
  const Stages st;
  const uint64_t key = internal::RotationKey(spec.seed);
  const Pieces full(std::min(B, kMaxRotBlock));
  BlockSigns signs;
  HWY_ALIGN float scratch[kMaxRotBlock];
  // Results are converted in the register and stored to the destination. In place (dst ==
  // in, f32) is fine: a piece is read whole before any of it is written.
  bool nonfinite = false;
  VI m = hn::Zero(DI());  // guard: the largest |result| bits
  const size_t small = WithSmallBlocks(B, n, [&](auto m_tag) EQUARX_LAMBDA_INLINE {
    constexpr size_t M = decltype(m_tag)::value;
    const VF scale = hn::Set(df, PowTwoNeg((int(hwy::FloorLog2(B)) + 1) / 2));
    ForSmallBlocks(key, offset / B, n / B, [&](size_t j, uint64_t word) EQUARX_LAMBDA_INLINE {
      const size_t at = j * B;
      PieceInRegisters<M>(
          st, [&](size_t i) EQUARX_LAMBDA_INLINE { return hn::Mul(hn::LoadU(df, in + at + i * kN), scale); },
          [&](size_t i, VF v) EQUARX_LAMBDA_INLINE {
            InverseOut<T, kGuard>(st, word >> (i * kN), v, dst, at + i * kN, &m);
          });
    });
  });
  uint64_t b = (offset + small) / B;  // the block index, counted up (no division per block)
  for (size_t s = small; s < n; s += B, ++b) {
    const size_t len = std::min(B, n - s);
    if (!AllPiecesVectorised(len, N) || len > kMaxRotBlock) {
      nonfinite |= ref::RotateInverse(spec, in + s, len, offset + s, T,
                                      static_cast<uint8_t*>(dst) + s * DTypeSize(T));
      continue;
    }
    signs.Start(key, b, B, len);
    size_t first = 0;
    const Pieces pieces = len == B ? full : Pieces(len);
    for (int pi = 0; pi < pieces.count; ++pi) {
      const int k = pieces.log2[pi];
      const size_t p = size_t(1) << k;
      const VF scale = hn::Set(df, PowTwoNeg((k + 1) / 2));
      const float* from = in + s + first;
      const size_t at = s + first;
      auto load = [&](size_t i) EQUARX_LAMBDA_INLINE { return hn::Mul(hn::LoadU(df, from + i * N), scale); };
      auto store = [&](size_t i, VF v) EQUARX_LAMBDA_INLINE {
        InverseOut<T, kGuard>(st, signs.Bits(first + i * N), v, dst, at + i * N, &m);
      };
      Piece(st, p, load, store, scratch);
      first += p;
    }
  }
  if constexpr (kGuard) nonfinite |= AnyAtLeast(m, kInfBits);
  return nonfinite;
}

bool RotateInverseImpl(const RotationSpec& spec, const float* in, size_t n, uint64_t offset,
                       DType t, void* dst) {
  return WithDType(t, [&](auto tag) HWY_ATTR {
    constexpr DType T = decltype(tag)::value;
    return spec.guard ? InverseT<T, true>(spec, in, n, offset, dst)
                      : InverseT<T, false>(spec, in, n, offset, dst);
  });
}

bool SafeToRotateImpl(DType t, const void* src, size_t n) {
  const DU du;
  const size_t N = hn::Lanes(du);
  size_t i = 0;
  uint32_t m = 0;
  if (t == DType::kFloat32) {
    const float* f = static_cast<const float*>(src);
    VI mv = hn::Zero(DI());
    for (; i + N <= n; i += N) mv = hn::Max(mv, AbsBits(hn::LoadU(DF(), f + i)));
    m = MaxLane(mv);
    if (m >= kUnsafeBits) return false;
  } else {
    const uint16_t* h = static_cast<const uint16_t*>(src);
    VU mv = hn::Zero(du);
    for (; i + N <= n; i += N)
      mv = hn::Max(mv, hn::And(hn::PromoteTo(du, hn::LoadU(D16(), h + i)), hn::Set(du, 0x7FFFu)));
    m = uint32_t(hn::GetLane(hn::MaxOfLanes(du, mv)));
    // bf16 2^100 = 0x7180; f16's largest finite value is below 2^100, so only Inf/NaN count.
    if (m >= (t == DType::kBFloat16 ? 0x7180u : 0x7C00u)) return false;
  }
  const uint8_t* p = static_cast<const uint8_t*>(src) + i * DTypeSize(t);
  return ref::SafeToRotate(t, p, n - i);
}

}  // namespace

// Exported wrappers (HWY_EXPORT needs names outside the anonymous namespace).
bool RotateForwardTarget(const RotationSpec& spec, DType t, const void* src, size_t n,
                         uint64_t offset, float* out) {
  return RotateForwardImpl(spec, t, src, n, offset, out);
}
bool RotateInverseTarget(const RotationSpec& spec, const float* in, size_t n, uint64_t offset,
                         DType t, void* dst) {
  return RotateInverseImpl(spec, in, n, offset, t, dst);
}
bool SafeToRotateTarget(DType t, const void* src, size_t n) { return SafeToRotateImpl(t, src, n); }

}  // namespace HWY_NAMESPACE
}  // namespace equarx::codec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace equarx::codec {

HWY_EXPORT(RotateForwardTarget);
HWY_EXPORT(RotateInverseTarget);
HWY_EXPORT(SafeToRotateTarget);

bool RotateForward(RotationSpec spec, DType src_type, const void* src, size_t n, uint64_t offset,
                   float* out) {
  if (n == 0 || spec.block == 0) return false;
  return HWY_DYNAMIC_DISPATCH(RotateForwardTarget)(spec, src_type, src, n, offset, out);
}

bool RotateInverse(RotationSpec spec, const float* in, size_t n, uint64_t offset, DType dst_type,
                   void* dst) {
  if (n == 0 || spec.block == 0) return false;
  return HWY_DYNAMIC_DISPATCH(RotateInverseTarget)(spec, in, n, offset, dst_type, dst);
}

bool SafeToRotate(DType type, const void* src, size_t n) {
  if (n == 0) return true;
  return HWY_DYNAMIC_DISPATCH(SafeToRotateTarget)(type, src, n);
}

}  // namespace equarx::codec
#endif  // HWY_ONCE
