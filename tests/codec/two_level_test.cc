// Tests of two-level block scales (WireSpec::scale = kScaleTwoLevel, codec.h "Two-level
// scales"), on the scalar reference: the worked example of docs/wire_format.md byte for byte,
// the layout and its size, the per-element bound (half a sub-block step, never more than the
// block's bf16 step), the flagged block (every multiplier 15: the bf16-scale block exactly),
// independence of the segment cut (stochastic rounding too), telemetry per sub-block, and
// that on data whose sub-blocks differ in range the error falls below the one-level bf16
// scale's at the same block. The fused kernels against their composition: block_formats_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "codec/codec.h"
#include "wire_util.h"

namespace equarx::codec {
namespace {

WireSpec TwoLevel(Format f, uint32_t B) {
  WireSpec s{f, B};
  s.scale = kScaleTwoLevel;
  return s;
}

// Gaussian data whose sub-blocks of 8 have scales spread over 2^-4 .. 1 (what a rotated block
// with an uneven energy looks like), plus one large outlier per block of 64.
std::vector<float> Uneven(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(n);
  float sub = 1.0f;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) sub = std::ldexp(1.0f, -int(rng() % 5));
    x[i] = nd(rng) * sub;
    if (i % 64 == 17) x[i] = 6.0f;
  }
  return x;
}

// docs/wire_format.md, "Two-level scales": int8, B = 16, x = [3.0, -1.5, 0 x 6, 0.25, -0.125,
// 0 x 6].
TEST(TwoLevelScales, WorkedExampleOfTheWireFormatDoc) {
  const WireSpec spec = TwoLevel(Format::kInt8Block, 16);
  std::vector<float> x(16, 0.0f);
  x[0] = 3.0f, x[1] = -1.5f, x[8] = 0.25f, x[9] = -0.125f;
  const std::vector<uint8_t> w = Enc(spec, x);
  std::vector<uint8_t> want = {0xC2, 0x3C, 0x1F, 0x7F, 0xC1, 0, 0, 0, 0, 0, 0, 0x54, 0xD6,
                               0,    0,    0,    0,    0,    0};
  EXPECT_EQ(w, want);
  const std::vector<float> y = Dec(spec, w, 16);
  EXPECT_EQ(y[0], 3.0075684f);    // 127 * 0.023681640625 (the bf16 scale)
  EXPECT_EQ(y[1], -1.4919434f);   // -63 * s
  EXPECT_EQ(y[8], 0.24865723f);   // 84 * s * 2/16 (sub-block multiplier code 1)
  EXPECT_EQ(y[9], -0.12432861f);  // -42 * s * 2/16
  std::vector<uint8_t> simd(w.size());
  Encode(spec, DType::kFloat32, x.data(), 16, simd.data());  // the dispatched kernel
  EXPECT_EQ(simd, want);
}

TEST(TwoLevelScales, LayoutAndSize) {
  for (Format f : {Format::kInt8Block, Format::kInt4Block})
    for (uint32_t B : {16u, 32u, 64u, 128u, 256u})
      for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(9), size_t(B - 1), size_t(B),
                       size_t(B + 3), size_t(5 * B + 13)}) {
        const size_t nb = (n + B - 1) / B, subs = (n + 7) / 8;
        const size_t codes = f == Format::kInt4Block ? (n + 1) / 2 : n;
        EXPECT_EQ(WireBytes(TwoLevel(f, B), n), 2 * nb + (subs + 1) / 2 + codes)
            << FormatName(f) << " B=" << B << " n=" << n;
      }
  // 128 elements: 128 codes + 2 scale bytes + 8 nibble bytes = 138, 0.539 of bf16's 256.
  EXPECT_EQ(WireBytes(TwoLevel(Format::kInt8Block, 128), 128), 138u);
}

// Every element within half its sub-block's step of the input, and every step at most the
// block's bf16 step s: the one-level bound (half of s) holds a fortiori.
TEST(TwoLevelScales, ErrorWithinHalfASubBlockStep) {
  for (Format f : {Format::kInt8Block, Format::kInt4Block})
    for (uint32_t B : {16u, 64u, 128u}) {
      const WireSpec spec = TwoLevel(f, B);
      const size_t n = 9 * B + 5;
      const std::vector<float> x = Uneven(n, B);
      EncodeStats st;
      const std::vector<uint8_t> w = Enc(spec, x, &st);
      const std::vector<float> y = Dec(spec, w, n);
      const float q = f == Format::kInt4Block ? 7.0f : 127.0f;
      const size_t nb = (n + B - 1) / B;
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, w.data() + 2 * (i / B), 2);
        const float s = std::bit_cast<float>(uint32_t(h) << 16);
        const uint32_t c = (w[2 * nb + i / 16] >> (4 * ((i / 8) & 1))) & 0xF;
        const float t = s * float(c + 1) / 16;
        float a = 0;  // the block's absmax
        for (size_t j = i / B * B; j < std::min(n, i / B * B + B); ++j) a = std::max(a, std::fabs(x[j]));
        EXPECT_GE(s, a / q);
        EXPECT_LE(std::fabs(y[i] - x[i]), 0.5f * t * (1 + 1e-6f) + 1e-30f)
            << FormatName(f) << " B=" << B << " i=" << i;
      }
      EXPECT_EQ(st.values, n);
    }
}

// Same bytes for a block holding NaN/Inf as the bf16-scale block (the flag in the scale,
// every multiplier code 15), and the same decoded values.
TEST(TwoLevelScales, FlaggedBlockIsTheBf16BlockWithEveryMultiplier15) {
  std::vector<float> x = Uneven(32, 3);
  x[3] = NAN, x[20] = -INFINITY;
  WireSpec one{Format::kInt8Block, 32};
  one.scale = kScaleBF16;
  const WireSpec two = TwoLevel(Format::kInt8Block, 32);
  const std::vector<uint8_t> w1 = Enc(one, x), w2 = Enc(two, x);
  ASSERT_EQ(w2.size(), w1.size() + 2);
  EXPECT_EQ(w2[0], w1[0]);
  EXPECT_EQ(w2[1], w1[1]);
  EXPECT_EQ(w2[2], 0xFF);
  EXPECT_EQ(w2[3], 0xFF);
  EXPECT_TRUE(std::equal(w1.begin() + 2, w1.end(), w2.begin() + 4));
  const std::vector<float> y1 = Dec(one, w1, 32), y2 = Dec(two, w2, 32);
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), 4 * 32));
}

// Cutting a tensor into segments at block boundaries gives the same decoded values as one
// segment (the sub-block grid is anchored to the block grid).
TEST(TwoLevelScales, IndependentOfTheSegmentCut) {
  for (uint8_t r : {kRoundNearestEven, kRoundStochastic}) {
    WireSpec spec = TwoLevel(Format::kInt8Block, 64);
    spec.rounding = r, spec.seed = 11, spec.stream = 2;
    const size_t n = 64 * 7 + 21;
    const std::vector<float> x = Uneven(n, 9);
    const std::vector<float> whole = Dec(spec, Enc(spec, x), n);
    for (size_t cut : {size_t(64), size_t(192)}) {
      WireSpec tail = spec;
      tail.offset = cut;
      const std::vector<float> a(x.begin(), x.begin() + long(cut)), b(x.begin() + long(cut), x.end());
      std::vector<float> ya = Dec(spec, Enc(spec, a), a.size()), yb = Dec(tail, Enc(tail, b), b.size());
      ya.insert(ya.end(), yb.begin(), yb.end());
      EXPECT_EQ(0, std::memcmp(whole.data(), ya.data(), 4 * n)) << "cut " << cut << " r=" << int(r);
    }
  }
}

// The telemetry sums one estimate per sub-block: step t_k, t_k^2/12 per element.
TEST(TwoLevelScales, TelemetryPerSubBlock) {
  const WireSpec spec = TwoLevel(Format::kInt8Block, 16);
  std::vector<float> x(16, 0.0f);
  x[0] = 3.0f, x[1] = -1.5f, x[8] = 0.25f, x[9] = -0.125f;
  EncodeStats st;
  Enc(spec, x, &st);
  const double s = 0.023681640625, t1 = s / 8;
  EXPECT_EQ(st.values, 16u);
  EXPECT_EQ(st.clipped, 0u);
  EXPECT_NEAR(st.sum_sq_err_est, 8 * s * s / 12 + 8 * t1 * t1 / 12, 1e-12);
  EXPECT_FLOAT_EQ(st.max_abs_err_est, float(s / 2));
}

// Where sub-blocks differ in range, the multipliers buy precision: MSE well below the
// one-level bf16 scale at the same block.
TEST(TwoLevelScales, BeatsTheOneLevelScaleOnUnevenBlocks) {
  const size_t n = 128 * 64;
  const std::vector<float> x = Uneven(n, 21);
  for (Format f : {Format::kInt8Block, Format::kInt4Block}) {
    WireSpec one{f, 128};
    one.scale = kScaleBF16;
    const WireSpec two = TwoLevel(f, 128);
    const std::vector<float> y1 = Dec(one, Enc(one, x), n), y2 = Dec(two, Enc(two, x), n);
    double e1 = 0, e2 = 0;
    for (size_t i = 0; i < n; ++i)
      e1 += std::pow(double(y1[i]) - x[i], 2), e2 += std::pow(double(y2[i]) - x[i], 2);
    EXPECT_LT(e2, 0.25 * e1) << FormatName(f);
  }
}

}  // namespace
}  // namespace equarx::codec
