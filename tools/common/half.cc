// equarx tools — scalar 16-bit float conversions (see half.h).
#include "half.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace equarx::tools {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds finite x once to a binary format with `p` significand bits (implicit bit included),
// minimum normal exponent `emin` and largest finite value `max_finite`.
double RoundToFormat(double x, int p, int emin, double max_finite) {
  if (!std::isfinite(x) || x == 0.0) return x;
  int e = std::ilogb(x);
  if (e < emin) e = emin;  // subnormal range: fixed quantum 2^(emin - p + 1)
  const double scaled = std::ldexp(x, p - 1 - e);  // exact (power-of-two scaling)
  const double q = std::nearbyint(scaled);         // round half to even (default mode)
  const double r = std::ldexp(q, e - (p - 1));
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

}  // namespace

uint16_t F32ToBF16(float f) {
  const uint32_t x = Bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t(((x >> 16) & 0x8000u) | 0x7FC0u);
  const uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);
  return uint16_t(rounded >> 16);
}

float BF16ToF32(uint16_t h) { return FromBits(uint32_t(h) << 16); }

uint16_t F32ToF16(float f) {
  const uint32_t x = Bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return uint16_t(sign | 0x7E00u);  // NaN
  if (ax >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // >= 65520 rounds to Inf
  if (ax < 0x38800000u) {                                   // below 2^-14: subnormal / zero
    const float q = std::nearbyint(std::fabs(f) * 16777216.0f);  // units of 2^-24, exact scale
    return uint16_t(sign | uint16_t(q));                          // 1024 encodes 2^-14 exactly
  }
  const uint32_t exp = (ax >> 23) - 127 + 15;
  const uint32_t man = ax & 0x7FFFFFu;
  uint32_t h = (exp << 10) | (man >> 13);
  const uint32_t rem = man & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent
  return uint16_t(sign | h);
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    const float v = std::ldexp(float(man), -24);
    return (h & 0x8000u) ? -v : v;
  }
  if (exp == 31) return FromBits(sign | 0x7F800000u | (man << 13));
  return FromBits(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

double RoundF64ToBF16(double x) { return RoundToFormat(x, 8, -126, 3.3895313892515355e38); }
double RoundF64ToF16(double x) { return RoundToFormat(x, 11, -14, 65504.0); }
double RoundF64ToF32(double x) { return double(float(x)); }

void F32ToBF16Array(const float* src, size_t n, uint16_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = F32ToBF16(src[i]);
}
void BF16ToF32Array(const uint16_t* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = BF16ToF32(src[i]);
}
void F32ToF16Array(const float* src, size_t n, uint16_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = F32ToF16(src[i]);
}
void F16ToF32Array(const uint16_t* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = F16ToF32(src[i]);
}

}  // namespace equarx::tools
