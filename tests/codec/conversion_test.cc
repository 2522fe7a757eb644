// Tests of the scalar reference conversions (bf16, f16, e5m2 <-> f32) against independent
// oracles: decoding is checked exhaustively against the IEEE formula evaluated in double;
// encoding is checked on many f32 bit patterns (ties, subnormals, overflow, NaN, random)
// against a brute-force "nearest representable value, ties to even code" search in double.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "codec/codec.h"

namespace equarx::codec {
namespace {

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }
float Flt(uint32_t u) { return std::bit_cast<float>(u); }

// Value of a binary float with `ebits` exponent and `mbits` mantissa bits, from the formula.
double FormulaValue(uint32_t code, int ebits, int mbits) {
  const uint32_t sign = (code >> (ebits + mbits)) & 1u;
  const uint32_t e = (code >> mbits) & ((1u << ebits) - 1);
  const uint32_t m = code & ((1u << mbits) - 1);
  const int bias = (1 << (ebits - 1)) - 1;
  double v;
  if (e == 0) {
    v = std::ldexp(double(m), 1 - bias - mbits);
  } else if (e == (1u << ebits) - 1) {
    v = m ? NAN : INFINITY;
  } else {
    v = std::ldexp(double((1u << mbits) | m), int(e) - bias - mbits);
  }
  return sign ? -v : v;
}

// Oracle encoder: magnitude codes 0..inf_code are monotonic; inf_code is treated as the
// value 2^(emax+1) while rounding (that is what IEEE rounding to nearest even does).
uint32_t OracleEncode(float f, int ebits, int mbits, bool saturate, uint32_t nan_code) {
  if (std::isnan(f)) return nan_code;
  const uint32_t sign_bit = 1u << (ebits + mbits);
  const uint32_t inf_code = ((1u << ebits) - 1) << mbits;
  const double x = std::fabs(double(f));
  auto val = [&](uint32_t c) {
    if (c == inf_code) return std::ldexp(1.0, (1 << (ebits - 1)));  // 2^(emax+1)
    return FormulaValue(c, ebits, mbits);
  };
  uint32_t code;
  if (std::isinf(f)) {
    code = inf_code;
  } else if (x >= val(inf_code)) {
    code = inf_code;
  } else {
    uint32_t lo = 0, hi = inf_code;  // largest code with val <= x
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (val(mid) <= x) lo = mid; else hi = mid - 1;
    }
    code = lo;
    if (val(lo) != x) {
      const double dlo = x - val(lo), dhi = val(lo + 1) - x;
      if (dhi < dlo || (dhi == dlo && (lo & 1u))) code = lo + 1;
    }
  }
  if (saturate && code == inf_code && !std::isinf(f)) code = inf_code - 1;
  return code | (std::signbit(f) ? sign_bit : 0u);
}

// Decodes every code of a format with `ebits` exponent and `mbits` mantissa bits and checks it
// against the formula, sign included; a NaN code must decode to a NaN, of bits nan_bits(code)
// where that is given.
void CheckDecodeExhaustive(const std::function<float(uint32_t)>& decode, int ebits, int mbits,
                           const std::function<uint32_t(uint32_t)>& nan_bits = nullptr) {
  const uint32_t sign = 1u << (ebits + mbits);
  for (uint32_t c = 0; c < 2 * sign; ++c) {
    const float got = decode(c);
    const double want = FormulaValue(c, ebits, mbits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << c;
      if (nan_bits) {
        ASSERT_EQ(Bits(got), nan_bits(c)) << c;
      }
    } else {
      ASSERT_EQ(double(got), want) << c;
      ASSERT_EQ(std::signbit(got), bool(c & sign)) << c;
    }
  }
}

TEST(Conversion, BF16DecodeExhaustive) {
  CheckDecodeExhaustive([](uint32_t h) { return ref::BF16ToF32(uint16_t(h)); }, 8, 7,
                        [](uint32_t h) { return h << 16; });  // payload kept
}

TEST(Conversion, F16DecodeExhaustive) {
  CheckDecodeExhaustive([](uint32_t h) { return ref::F16ToF32(uint16_t(h)); }, 5, 10, [](uint32_t h) {
    return ((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x3FFu) << 13);
  });
}

TEST(Conversion, E5M2DecodeExhaustive) {
  ASSERT_NO_FATAL_FAILURE(CheckDecodeExhaustive([](uint32_t b) { return ref::E5M2ToF32(uint8_t(b)); }, 5, 2));
  EXPECT_EQ(ref::E5M2ToF32(0x7B), 57344.0f);
  EXPECT_EQ(ref::E5M2ToF32(0x01), 0x1p-16f);
}

// f32 bit patterns that stress every rounding path of a format with `mbits` mantissa bits.
std::vector<uint32_t> Patterns(int mbits) {
  std::vector<uint32_t> p;
  const int drop = 23 - mbits;
  for (uint32_t e = 0; e < 256; ++e) {
    for (uint32_t m : {0u, 1u, 0x7FFFFFu, 0x400000u}) p.push_back((e << 23) | m);
    // exact ties, just below and above ties, with odd and even kept mantissa
    for (uint32_t kept : {0u, 1u, 2u, 3u, (1u << mbits) - 1}) {
      const uint32_t base = (e << 23) | (kept << drop);
      const uint32_t half = 1u << (drop - 1);
      for (uint32_t d : {half, half - 1, half + 1}) p.push_back(base | d);
    }
  }
  // subnormal-result region: ties at every subnormal shift
  for (int sh = 0; sh < 26; ++sh)
    for (uint32_t e = 90; e < 115; ++e) p.push_back((e << 23) | (1u << sh));
  std::mt19937 rng(1234);
  for (int i = 0; i < 300000; ++i) p.push_back(rng());
  std::vector<uint32_t> all;
  for (uint32_t u : p) {
    all.push_back(u & 0x7FFFFFFFu);
    all.push_back(u | 0x80000000u);
  }
  return all;
}

TEST(Conversion, F32ToBF16Rne) {
  for (uint32_t u : Patterns(7)) {
    const float f = Flt(u);
    ASSERT_EQ(ref::F32ToBF16(f), OracleEncode(f, 8, 7, false, 0x7FC0)) << std::hex << u;
  }
  EXPECT_EQ(ref::F32ToBF16(Flt(0x3F808000)), 0x3F80);  // tie, even kept
  EXPECT_EQ(ref::F32ToBF16(Flt(0x3F818000)), 0x3F82);  // tie, odd kept -> up
  EXPECT_EQ(ref::F32ToBF16(Flt(0xFFC12345)), 0x7FC0);  // NaN canonical, sign dropped
  EXPECT_EQ(ref::F32ToBF16(Flt(0x7F7FFFFF)), 0x7F80);  // rounds to Inf
}

TEST(Conversion, F32ToF16Rne) {
  for (uint32_t u : Patterns(10)) {
    const float f = Flt(u);
    ASSERT_EQ(ref::F32ToF16(f), OracleEncode(f, 5, 10, false, 0x7E00)) << std::hex << u;
  }
  EXPECT_EQ(ref::F32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(ref::F32ToF16(65519.996f), 0x7BFF);
  EXPECT_EQ(ref::F32ToF16(65520.0f), 0x7C00);   // tie to even -> Inf
  EXPECT_EQ(ref::F32ToF16(-1e30f), 0xFC00);
  EXPECT_EQ(ref::F32ToF16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(ref::F32ToF16(0x1p-25f), 0x0000);  // tie -> even (0)
  EXPECT_EQ(ref::F32ToF16(0x1.8p-24f), 0x0002);  // tie 1.5 units -> 2
  EXPECT_EQ(ref::F32ToF16(-0x1p-26f), 0x8000);
  EXPECT_EQ(ref::F32ToF16(Flt(0xFF800001)), 0x7E00);
}

TEST(Conversion, F32ToE5M2RneSaturating) {
  for (uint32_t u : Patterns(2)) {
    const float f = Flt(u);
    uint32_t want = OracleEncode(f, 5, 2, /*saturate=*/true, 0x7F);
    ASSERT_EQ(ref::F32ToE5M2(f), want) << std::hex << u;
  }
  EXPECT_EQ(ref::F32ToE5M2(57344.0f), 0x7B);
  EXPECT_EQ(ref::F32ToE5M2(1e30f), 0x7B);
  EXPECT_EQ(ref::F32ToE5M2(-1e30f), 0xFB);
  EXPECT_EQ(ref::F32ToE5M2(INFINITY), 0x7C);
  EXPECT_EQ(ref::F32ToE5M2(-INFINITY), 0xFC);
  EXPECT_EQ(ref::F32ToE5M2(-NAN), 0x7F);
  // No double rounding through f16: 1 + 2^-3 + 2^-12 is just above the e5m2 tie 1.125,
  // so it rounds up to 1.25 (0x3D); via f16 it would first become the tie 1.125 -> 1.0.
  EXPECT_EQ(ref::F32ToE5M2(1.0f + 0x1p-3f + 0x1p-12f), 0x3D);
  EXPECT_EQ(ref::F32ToE5M2(1.125f), 0x3C);  // exact tie -> even (1.0)
  EXPECT_EQ(ref::F32ToE5M2(1.375f), 0x3E);  // exact tie, odd -> up (1.5)
}

TEST(Conversion, RoundTripsAreIdentity) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const bool bnan = (h & 0x7FFF) > 0x7F80, fnan = (h & 0x7FFF) > 0x7C00;
    EXPECT_EQ(ref::F32ToBF16(ref::BF16ToF32(uint16_t(h))), bnan ? 0x7FC0 : h);
    EXPECT_EQ(ref::F32ToF16(ref::F16ToF32(uint16_t(h))), fnan ? 0x7E00 : h);
  }
  for (uint32_t b = 0; b < 256; ++b) {
    const bool nan = (b & 0x7F) > 0x7C;
    EXPECT_EQ(ref::F32ToE5M2(ref::E5M2ToF32(uint8_t(b))), nan ? 0x7F : b);
  }
}

TEST(Conversion, ConvertArraysAndFormatMetadata) {
  const float src[5] = {1.0f, -2.5f, 65536.0f, NAN, 0x1p-30f};
  uint16_t h[5], bf[5];
  ref::Convert(DType::kFloat32, src, 5, DType::kFloat16, h);
  ref::Convert(DType::kFloat32, src, 5, DType::kBFloat16, bf);
  EXPECT_EQ(std::vector<uint16_t>(h, h + 5), (std::vector<uint16_t>{0x3C00, 0xC100, 0x7C00, 0x7E00, 0x0000}));
  EXPECT_EQ(bf[2], 0x4780);
  EXPECT_EQ(bf[3], 0x7FC0);
  uint16_t bf_nan = 0x7F81, out;  // identity conversion is a bit copy (payload kept)
  ref::Convert(DType::kBFloat16, &bf_nan, 1, DType::kBFloat16, &out);
  EXPECT_EQ(out, 0x7F81);
  ref::Convert(DType::kBFloat16, &bf_nan, 1, DType::kFloat16, &out);
  EXPECT_EQ(out, 0x7E00);

  EXPECT_EQ(RawFormatOf(DType::kFloat32), Format::kRawF32);
  EXPECT_EQ(RawFormatOf(DType::kBFloat16), Format::kRawBF16);
  EXPECT_EQ(RawFormatOf(DType::kFloat16), Format::kRawF16);
  EXPECT_STREQ(FormatName(Format::kInt8Block), "int8_block");
  EXPECT_EQ(WireBytes({Format::kInt8Block, 128}, 0), 0u);
  EXPECT_EQ(WireBytes({Format::kInt8Block, 128}, 1), 5u);
  EXPECT_EQ(WireBytes({Format::kInt8Block, 128}, 256), 256u + 8u);
  EXPECT_EQ(WireBytes({Format::kInt8Block, 128}, 257), 257u + 12u);
  EXPECT_EQ(WireBytes({Format::kRawBF16, 0}, 10), 20u);
  EXPECT_EQ(WireBytes({Format::kRawE5M2, 0}, 10), 10u);
  EXPECT_EQ(WireBytes({Format::kRawF32, 0}, size_t(1) << 31), size_t(1) << 33);
}

}  // namespace
}  // namespace equarx::codec
