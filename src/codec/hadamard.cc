// equarx codec — SIMD kernels of the randomized Walsh-Hadamard rotation (codec.h, "Rotation").
//
// Highway foreach_target unit (pattern of raw.cc). A rotation block is done piece by piece
// (power-of-two pieces, largest first); a piece of P >= N lanes runs vectorised:
//   forward  pass 1, per vector: load (widening bf16/f16 exactly), flip the signs whose bits
//            are set (XOR of the sign bit), multiply by 2^-floor(k/2), then the butterfly
//            stages h < N inside the register: partner s = TableLookupLanes(x, lane ^ h),
//            x <- (lane & h) ? s - x : x + s  (that is a + b on the lower lane, a - b on the
//            upper one: the reference's operands in the reference's order); store.
//            passes 2.., per stage h = N .. P/2: (a, b) <- (a + b, a - b) vector by vector.
//   inverse  the same scale (2^-ceil(k/2)) and stages on a stack tile, then the signs and the
//            conversion to the destination type (raw.cc's exact converters).
// Every output element goes through the same adds in the same order as in
// reference_rotation.cc, so every target is bitwise equal to it. Blocks with a piece shorter
// than a vector (the tensor's tail, odd block sizes) are handed to the reference whole.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

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

constexpr size_t kMaxRotBlock = 4096;

// Whether every power-of-two piece of a block of length len has at least N elements.
bool AllPiecesVectorised(size_t len, size_t n_lanes) { return (len & (n_lanes - 1)) == 0; }

// The sign mask of the N elements j .. j + N - 1 of block b (j a multiple of N, N <= 64).
HWY_INLINE hn::Mask<DF> SignMask(uint64_t seed, uint64_t b, size_t j, uint64_t* word,
                                 size_t* word_index) {
  const size_t N = hn::Lanes(DF());
  if (j / 64 != *word_index) {
    *word_index = j / 64;
    *word = RotationSignWord(seed, b, uint32_t(*word_index));
  }
  const uint64_t bits = *word >> (j % 64);
  uint8_t bytes[8];
  for (size_t i = 0; i < 8; ++i) bytes[i] = uint8_t(bits >> (8 * i));
  (void)N;
  return hn::LoadMaskBits(DF(), bytes);
}

// Butterfly stages h = 1 .. min(P, N) / 2 inside one vector.
HWY_INLINE VF InRegisterStages(VF x, size_t p) {
  const DF df;
  const DI di;
  const size_t N = hn::Lanes(df);
  const VI lane = hn::Iota(di, 0);
  for (size_t h = 1; h < N && h < p; h *= 2) {
    const VI hv = hn::Set(di, int32_t(h));
    const VF s = hn::TableLookupLanes(x, hn::IndicesFromVec(df, hn::Xor(lane, hv)));
    const auto upper = hn::RebindMask(df, hn::TestBit(lane, hv));
    x = hn::IfThenElse(upper, hn::Sub(s, x), hn::Add(x, s));
  }
  return x;
}

// Stages h = N .. P/2 across vectors, in place on x[0 .. P).
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

template <DType T>
void ForwardT(const RotationSpec& spec, const void* src, size_t n, uint64_t offset, float* out) {
  const DF df;
  const size_t N = hn::Lanes(df), B = spec.block;
  const VF sign_bit = hn::BitCast(df, hn::Set(DU(), 0x80000000u));
  for (size_t s = 0; s < n; s += B) {
    const size_t len = std::min(B, n - s);
    const uint64_t b = (offset + s) / B;
    if (!AllPiecesVectorised(len, N)) {
      ref::RotateForward(spec, T, static_cast<const uint8_t*>(src) + s * DTypeSize(T), len,
                         offset + s, out + s);
      continue;
    }
    uint64_t word = 0;
    size_t word_index = SIZE_MAX;
    size_t first = 0;
    for (int k = 30; k >= 0; --k) {
      const size_t p = size_t(1) << k;
      if (!(len & p)) continue;
      const VF scale = hn::Set(df, std::ldexp(1.0f, -(k / 2)));
      float* o = out + s + first;
      for (size_t v = 0; v < p; v += N) {
        VF x = LoadF<T>(src, s + first + v);
        const auto flip = SignMask(spec.seed, b, first + v, &word, &word_index);
        x = hn::IfThenElse(flip, hn::Xor(x, sign_bit), x);
        hn::StoreU(InRegisterStages(hn::Mul(x, scale), p), df, o + v);
      }
      CrossStages(o, p);
      first += p;
    }
  }
}

void RotateForwardImpl(const RotationSpec& spec, DType t, const void* src, size_t n,
                       uint64_t offset, float* out) {
  switch (t) {
    case DType::kFloat32: return ForwardT<DType::kFloat32>(spec, src, n, offset, out);
    case DType::kBFloat16: return ForwardT<DType::kBFloat16>(spec, src, n, offset, out);
    case DType::kFloat16: return ForwardT<DType::kFloat16>(spec, src, n, offset, out);
  }
}

void RotateInverseImpl(const RotationSpec& spec, const float* in, size_t n, uint64_t offset,
                       DType t, void* dst) {
  const DF df;
  const size_t N = hn::Lanes(df), B = spec.block;
  const VF sign_bit = hn::BitCast(df, hn::Set(DU(), 0x80000000u));
  HWY_ALIGN float tile[kMaxRotBlock];
  auto* d8 = static_cast<uint8_t*>(dst);
  const size_t esize = DTypeSize(t);
  for (size_t s = 0; s < n; s += B) {
    const size_t len = std::min(B, n - s);
    const uint64_t b = (offset + s) / B;
    if (!AllPiecesVectorised(len, N) || len > kMaxRotBlock) {
      ref::RotateInverse(spec, in + s, len, offset + s, t, d8 + s * esize);
      continue;
    }
    size_t first = 0;
    for (int k = 30; k >= 0; --k) {
      const size_t p = size_t(1) << k;
      if (!(len & p)) continue;
      const VF scale = hn::Set(df, std::ldexp(1.0f, -((k + 1) / 2)));
      for (size_t v = 0; v < p; v += N)
        hn::Store(InRegisterStages(hn::Mul(hn::LoadU(df, in + s + first + v), scale), p), df,
                  tile + first + v);
      CrossStages(tile + first, p);
      first += p;
    }
    uint64_t word = 0;
    size_t word_index = SIZE_MAX;
    float* out_f32 = t == DType::kFloat32 ? reinterpret_cast<float*>(d8) + s : tile;
    for (size_t v = 0; v < len; v += N) {
      const VF x = hn::Load(df, tile + v);
      const auto flip = SignMask(spec.seed, b, v, &word, &word_index);
      hn::StoreU(hn::IfThenElse(flip, hn::Xor(x, sign_bit), x), df, out_f32 + v);
    }
    if (t == DType::kBFloat16)
      CvtF32ToBF16(tile, len, reinterpret_cast<uint16_t*>(d8 + s * esize));
    else if (t == DType::kFloat16)
      CvtF32ToF16(tile, len, reinterpret_cast<uint16_t*>(d8 + s * esize));
  }
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
    if (m >= 0x71800000u) return false;  // bits of 2^100
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
void RotateForwardTarget(const RotationSpec& spec, DType t, const void* src, size_t n,
                         uint64_t offset, float* out) {
  RotateForwardImpl(spec, t, src, n, offset, out);
}
void RotateInverseTarget(const RotationSpec& spec, const float* in, size_t n, uint64_t offset,
                         DType t, void* dst) {
  RotateInverseImpl(spec, in, n, offset, t, dst);
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

void RotateForward(RotationSpec spec, DType src_type, const void* src, size_t n, uint64_t offset,
                   float* out) {
  if (n == 0 || spec.block == 0) return;
  HWY_DYNAMIC_DISPATCH(RotateForwardTarget)(spec, src_type, src, n, offset, out);
}

void RotateInverse(RotationSpec spec, const float* in, size_t n, uint64_t offset, DType dst_type,
                   void* dst) {
  if (n == 0 || spec.block == 0) return;
  HWY_DYNAMIC_DISPATCH(RotateInverseTarget)(spec, in, n, offset, dst_type, dst);
}

bool SafeToRotate(DType type, const void* src, size_t n) {
  if (n == 0) return true;
  return HWY_DYNAMIC_DISPATCH(SafeToRotateTarget)(type, src, n);
}

}  // namespace equarx::codec
#endif  // HWY_ONCE
