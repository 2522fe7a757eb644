// dequant.cc — block decoders. Layouts (little-endian, d/dmin are IEEE half):
//   Q8_0  (32): d, int8 q[32]                       x = d*q
//   Q4_0  (32): d, u8 qs[16]                        low nibbles -> x[0..15], high -> x[16..31], x = d*(q-8)
//   Q5_0  (32): d, u32 qh, u8 qs[16]                as Q4_0 with bit j of qh the 5th bit of x[j], x = d*(q-16)
//   Q4_K (256): d, dmin, u8 scales[12], u8 qs[128]  8 sub-blocks of 32 with 6-bit scale and min
//   Q5_K (256): d, dmin, scales[12], qh[32], qs[128] as Q4_K plus one high bit per value
//   Q6_K (256): ql[128], qh[64], int8 scales[16], d  16 sub-blocks of 16, x = d*scale*(q-32)
#include "dequant.h"

#include <bit>
#include <cstring>

#include "gguf.h"

namespace gemma3 {
namespace {

uint16_t Load16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
uint32_t Load32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

// The 6-bit scale and min of sub-block j of a Q4_K/Q5_K super-block: sub-blocks 0-3 keep
// them in the low 6 bits of bytes j and j+4; 4-7 split them over the nibbles of byte j+4 and
// the top two bits of bytes j-4 and j.
void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void BlockQ8_0(const uint8_t* b, float* y) {
  float d = HalfToFloat(Load16(b));
  const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j]);
}

void BlockQ4_0(const uint8_t* b, float* y) {
  float d = HalfToFloat(Load16(b));
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0xF) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void BlockQ5_0(const uint8_t* b, float* y) {
  float d = HalfToFloat(Load16(b));
  uint32_t qh = Load32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    int lo = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = d * static_cast<float>(lo - 16);
    y[j + 16] = d * static_cast<float>(hi - 16);
  }
}

void BlockQ4_K(const uint8_t* b, float* y) {
  float d = HalfToFloat(Load16(b));
  float dmin = HalfToFloat(Load16(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int chunk = 0; chunk < 4; ++chunk) {  // 64 values: low nibbles then high nibbles
    uint8_t sc, m;
    ScaleMinK4(2 * chunk, scales, &sc, &m);
    float d1 = d * sc, m1 = dmin * m;
    ScaleMinK4(2 * chunk + 1, scales, &sc, &m);
    float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(qs[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(qs[l] >> 4) - m2;
    qs += 32;
    y += 64;
  }
}

void BlockQ5_K(const uint8_t* b, float* y) {
  float d = HalfToFloat(Load16(b));
  float dmin = HalfToFloat(Load16(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int chunk = 0; chunk < 4; ++chunk) {
    uint8_t sc, m;
    ScaleMinK4(2 * chunk, scales, &sc, &m);
    float d1 = d * sc, m1 = dmin * m;
    ScaleMinK4(2 * chunk + 1, scales, &sc, &m);
    float d2 = d * sc, m2 = dmin * m;
    const int bit_lo = 2 * chunk, bit_hi = 2 * chunk + 1;
    for (int l = 0; l < 32; ++l)
      y[l] = d1 * static_cast<float>((qs[l] & 0xF) + (((qh[l] >> bit_lo) & 1) << 4)) - m1;
    for (int l = 0; l < 32; ++l)
      y[32 + l] = d2 * static_cast<float>((qs[l] >> 4) + (((qh[l] >> bit_hi) & 1) << 4)) - m2;
    qs += 32;
    y += 64;
  }
}

void BlockQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  float d = HalfToFloat(Load16(b + 208));
  for (int half = 0; half < 2; ++half) {  // 128 values per half
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { man <<= 1; ++e; } while ((man & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | man << 13;
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7FFFFFFF;
  if (absx >= 0x7F800000) return static_cast<uint16_t>(sign | 0x7C00 | (absx > 0x7F800000 ? 0x200 : 0));
  if (absx >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past 65504
  if (absx < 0x38800000) {  // subnormal half (or zero): value / 2^-24, rounded to nearest even
    float scaled = std::bit_cast<float>(absx) * 16777216.0f;  // exact: multiplication by a power of two
    uint32_t q = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t mant = absx + 0xC8000000u;  // rebias exponent by -112 (<<23)
  uint32_t round = 0xFFF + ((mant >> 13) & 1);
  return static_cast<uint16_t>(sign | ((mant + round) >> 13));
}

float BFloat16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  return std::bit_cast<float>(bits);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

bool Dequantize(uint32_t type, const uint8_t* src, size_t n, float* dst) {
  size_t be, bb;
  if (!GgmlTypeBlock(type, &be, &bb) || n % be != 0) return false;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32: std::memcpy(dst, src, n * 4); return true;
    case GgmlType::kF16:
      for (size_t k = 0; k < n; ++k) dst[k] = HalfToFloat(Load16(src + 2 * k));
      return true;
    case GgmlType::kBF16:
      for (size_t k = 0; k < n; ++k) dst[k] = BFloat16ToFloat(Load16(src + 2 * k));
      return true;
    default: break;
  }
  void (*block)(const uint8_t*, float*) = nullptr;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kQ4_0: block = BlockQ4_0; break;
    case GgmlType::kQ5_0: block = BlockQ5_0; break;
    case GgmlType::kQ8_0: block = BlockQ8_0; break;
    case GgmlType::kQ4_K: block = BlockQ4_K; break;
    case GgmlType::kQ5_K: block = BlockQ5_K; break;
    case GgmlType::kQ6_K: block = BlockQ6_K; break;
    default: return false;
  }
  for (size_t k = 0; k < n / be; ++k) block(src + k * bb, dst + k * be);
  return true;
}

}  // namespace gemma3
