// equarx codec — scalar reference of the randomized Walsh-Hadamard rotation (codec.h,
// "Rotation"): the executable specification that every SIMD target of hadamard.cc must match
// bit for bit. Element by element, in the order the definition gives.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "codec/codec.h"
#include "codec/internal.h"

namespace equarx::codec {

uint64_t RotationSignWord(uint64_t seed, uint64_t b, uint32_t c) {
  return internal::SignWord(internal::RotationKey(seed), b, c);
}

void internal::PoisonBlock(float* out, size_t len) {
  const uint32_t nan = 0x7FC00000u;
  for (size_t j = 0; j < len; ++j) std::memcpy(out + j, &nan, 4);
}

namespace ref {
namespace {

float FlipIf(float x, bool flip) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u ^= flip ? 0x80000000u : 0u;
  std::memcpy(&x, &u, 4);
  return x;
}

// The in-place unnormalized Walsh-Hadamard butterfly of P = 2^k elements.
void Butterfly(float* x, size_t p) {
  for (size_t h = 1; h < p; h *= 2)
    for (size_t i = 0; i < p; i += 2 * h)
      for (size_t j = i; j < i + h; ++j) {
        const float a = x[j], b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
}

// Calls fn(first, P, k) for the power-of-two pieces of a block of length len, largest first.
template <typename Fn>
void ForPieces(size_t len, Fn fn) {
  size_t first = 0;
  for (int k = 62; k >= 0; --k) {
    const size_t p = size_t(1) << k;
    if (len & p) {
      fn(first, p, k);
      first += p;
    }
  }
}

void StoreAs(DType t, void* dst, size_t i, float v) {
  ref::Convert(DType::kFloat32, &v, 1, t, static_cast<uint8_t*>(dst) + i * DTypeSize(t));
}

}  // namespace

bool RotateForward(RotationSpec spec, DType src_type, const void* src, size_t n, uint64_t offset,
                   float* out) {
  const size_t B = spec.block;
  bool poisoned = false;
  for (size_t s = 0; s < n; s += B) {
    const size_t len = std::min(B, n - s);
    const uint64_t b = (offset + s) / B;
    if (spec.guard && !SafeToRotate(src_type, static_cast<const uint8_t*>(src) + s * DTypeSize(src_type), len)) {
      internal::PoisonBlock(out + s, len);
      poisoned = true;
      continue;
    }
    for (size_t j = 0; j < len; ++j) {
      const uint64_t w = RotationSignWord(spec.seed, b, uint32_t(j / 64));
      out[s + j] = FlipIf(internal::LoadAsF32(src_type, src, s + j), (w >> (j % 64)) & 1);
    }
    ForPieces(len, [&](size_t first, size_t p, int k) {
      const float scale = std::ldexp(1.0f, -(k / 2));
      for (size_t j = 0; j < p; ++j) out[s + first + j] *= scale;
      Butterfly(out + s + first, p);
    });
  }
  return poisoned;
}

bool RotateInverse(RotationSpec spec, const float* in, size_t n, uint64_t offset, DType dst_type,
                   void* dst) {
  const size_t B = spec.block;
  float stack[internal::kMaxRotBlock];  // one block: a call allocates nothing, up to this size
  std::vector<float> heap(B > internal::kMaxRotBlock ? B : 0);
  float* tmp = heap.empty() ? stack : heap.data();
  bool nonfinite = false;
  for (size_t s = 0; s < n; s += B) {
    const size_t len = std::min(B, n - s);
    const uint64_t b = (offset + s) / B;
    std::copy(in + s, in + s + len, tmp);
    ForPieces(len, [&](size_t first, size_t p, int k) {
      const float scale = std::ldexp(1.0f, -((k + 1) / 2));
      for (size_t j = 0; j < p; ++j) tmp[first + j] *= scale;
      Butterfly(tmp + first, p);
    });
    for (size_t j = 0; j < len; ++j) {
      const uint64_t w = RotationSignWord(spec.seed, b, uint32_t(j / 64));
      nonfinite = nonfinite || (spec.guard && !std::isfinite(tmp[j]));
      StoreAs(dst_type, dst, s + j, FlipIf(tmp[j], (w >> (j % 64)) & 1));
    }
  }
  return nonfinite;
}

bool SafeToRotate(DType type, const void* src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float x = internal::LoadAsF32(type, src, i);
    if (!(std::fabs(x) < 0x1p100f)) return false;  // NaN fails the comparison too
  }
  return true;
}

}  // namespace ref
}  // namespace equarx::codec
