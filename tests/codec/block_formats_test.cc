// Tests of the scalar reference of the integer (int8, int6, int5, int4) and fp8 (e4m3, e5m2)
// block formats, of stochastic rounding (reproducible, segment-cut independent, unbiased where
// nearest-even is biased) and of the opt-in telemetry: round-trip bounds, code packing,
// saturation, NaN/Inf in flagged blocks, the e4m3 conversion against a brute-force oracle, and
// the worked examples of docs/wire_format.md byte for byte.
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

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

uint32_t ScaleBits(const std::vector<uint8_t>& w, size_t b) {
  uint32_t s;
  std::memcpy(&s, w.data() + 4 * b, 4);
  return s;
}

// Max |x| over the finite elements of block b, and whether it holds a non-finite one.
float BlockAbsMax(const std::vector<float>& x, size_t B, size_t b, bool* nonfinite) {
  float a = 0;
  *nonfinite = false;
  for (size_t i = b * B; i < std::min(x.size(), (b + 1) * B); ++i) {
    if (std::isfinite(x[i])) a = std::max(a, std::fabs(x[i])); else *nonfinite = true;
  }
  return a;
}

std::vector<float> Wide(size_t n, size_t B, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> ed(-30, 30);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::ldexp(nd(rng), (i / B) % 2 ? ed(rng) : 0);
  return x;
}

// Every integer format round-trips within half a code step, a / (2Q): int8 a/254, int6 a/62,
// int5 a/30, int4 a/14 (a flagged block: Q - 1), at aligned and odd blocks.
TEST(IntReference, RoundTripBoundIsHalfAStep) {
  for (const BlockFormatInfo& row : kBlockFormats) {
    if (row.mbits != 0) continue;
    for (uint32_t B : {32u, 64u, 7u, 128u, 1000u}) {
      const WireSpec spec{row.format, B};
      std::vector<float> x = Wide(5 * B + 3, B, B);
      x[B + 1] = INFINITY;  // one flagged block
      EXPECT_EQ(WireBytes(spec, x.size()), 4 * 6 + (x.size() * row.bits + 7) / 8);
      const std::vector<float> y = Dec(spec, Enc(spec, x), x.size());
      for (size_t b = 0; b * B < x.size(); ++b) {
        bool nf;
        const float a = BlockAbsMax(x, B, b, &nf);
        const double bound = a / (2.0 * (nf ? row.q_flag : row.q)) + a * 0x1p-20;
        for (size_t i = b * B; i < std::min(x.size(), (b + 1) * B); ++i) {
          if (!std::isfinite(x[i])) continue;
          ASSERT_LE(std::fabs(double(x[i]) - y[i]), bound) << row.name << " " << B << " " << i;
        }
      }
      EXPECT_EQ(y[B + 1], INFINITY) << row.name;
    }
  }
}

// The packing of int6 and int5 codes against a bit string built here: every block holds +-Q
// (so s = inv = 1 and each code is x itself), blocks of 5 and 12 elements (codes cross bytes
// and blocks start inside a byte) and 16; the reference and the dispatched kernels give the
// bytes, and decoding gives x back.
TEST(IntReference, PackedCodesAreALowBitsFirstBitString) {
  for (Format f : {Format::kInt6Block, Format::kInt5Block}) {
    const BlockFormatInfo& row = *BlockInfoOf(f);
    const int q = int(row.q);
    for (uint32_t B : {5u, 12u, 16u}) {
      const size_t n = 4 * B + 3;
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i)
        x[i] = i % B == 0 ? float((i / B) % 2 ? -q : q) : float(int((i * 7919) % (2 * q + 1)) - q);
      std::vector<uint8_t> want((n * row.bits + 7) / 8, 0);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t code = uint32_t(int32_t(x[i])) & ((1u << row.bits) - 1u);
        for (unsigned k = 0; k < row.bits; ++k) {
          const size_t bit = i * row.bits + k;  // of the code part, low bits first
          if (code >> k & 1u) want[bit / 8] |= uint8_t(1u << (bit % 8));
        }
      }
      const WireSpec spec{f, B};
      const size_t nb = (n + B - 1) / B;
      std::vector<uint8_t> w = Enc(spec, x);
      ASSERT_EQ(w.size(), 4 * nb + want.size());
      EXPECT_EQ(std::vector<uint8_t>(w.begin() + 4 * nb, w.end()), want) << row.name << " B " << B;
      std::vector<uint8_t> simd(w.size());
      Encode(spec, DType::kFloat32, x.data(), n, simd.data());
      EXPECT_EQ(simd, w) << row.name << " B " << B;
      EXPECT_EQ(Dec(spec, w, n), x) << row.name << " B " << B;
    }
  }
}

TEST(Int4Reference, NibblePackingSpecialsAndOddTail) {
  // absmax 7 gives s = inv = 1: codes are roundeven(x).
  const WireSpec spec{Format::kInt4Block, 5};
  const std::vector<float> x = {7.0f, -1.0f, 2.5f, -3.5f, 0.4f,    // block 0
                                NAN, 1.0f, -INFINITY, INFINITY, 6.0f,  // block 1 (flagged)
                                -2.0f};                                // block 2, odd tail
  const std::vector<uint8_t> w = Enc(spec, x);
  ASSERT_EQ(w.size(), 12u + 6u);
  EXPECT_EQ(ScaleBits(w, 0), Bits(1.0f));
  EXPECT_EQ(ScaleBits(w, 1), Bits(1.0f) | 0x80000000u);  // a = 6, Q = 6
  EXPECT_EQ(ScaleBits(w, 2), Bits(2.0f / 7.0f));
  // codes: 7 -1 2 -4 0 | -8 1 -7 7 6 | -7
  const uint8_t want[6] = {0xF7, 0xC2, 0x80, 0x91, 0x67, 0x09};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(w[12 + i], want[i]) << i;
  const std::vector<float> y = Dec(spec, w, x.size());
  EXPECT_EQ(Bits(y[5]), 0x7FC00000u);
  EXPECT_EQ(y[7], -INFINITY);
  EXPECT_EQ(y[8], INFINITY);
  EXPECT_EQ(y[9], 6.0f);
  EXPECT_EQ(y[3], -4.0f);
}

TEST(Fp8Reference, E4M3ConversionAgainstOracle) {
  // All 256 codes decode by the formula; encoding is the nearest code (ties to even code).
  std::vector<double> val(127);
  for (uint32_t c = 0; c < 127; ++c) {
    const uint32_t e = c >> 3, m = c & 7;
    val[c] = e ? std::ldexp(double(8 + m), int(e) - 10) : std::ldexp(double(m), -9);
    EXPECT_EQ(double(ref::E4M3ToF32(uint8_t(c))), val[c]) << c;
    EXPECT_EQ(double(ref::E4M3ToF32(uint8_t(c | 0x80))), -val[c]) << c;
  }
  EXPECT_TRUE(std::isnan(ref::E4M3ToF32(0x7F)));
  EXPECT_TRUE(std::isnan(ref::E4M3ToF32(0xFF)));
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> ud(0, 1);
  for (int k = 0; k < 200000; ++k) {
    float f = float(std::ldexp(ud(rng), int(rng() % 24) - 14));
    if (k % 3 == 0) f = float((val[rng() % 126] + val[rng() % 126 + 1]) / 2);  // ties
    if (k % 5 == 0) f = -f;
    const double x = std::fabs(double(f));
    uint32_t best = 0;
    for (uint32_t c = 1; c < 127; ++c) {
      const double d = std::fabs(val[c] - x), db = std::fabs(val[best] - x);
      if (d < db || (d == db && (c & 1) == 0)) best = c;
    }
    if (x > 448) best = 0x7E;
    const uint8_t want = uint8_t(best | (std::signbit(f) ? 0x80 : 0));
    ASSERT_EQ(ref::F32ToE4M3(f), want) << f;
  }
  EXPECT_EQ(ref::F32ToE4M3(1e9f), 0x7E);
  EXPECT_EQ(ref::F32ToE4M3(-INFINITY), 0xFE);
  EXPECT_EQ(ref::F32ToE4M3(NAN), 0x7F);
}

// Relative bound of an fp8 block: |x - x^| <= |x| * 2^-(m+1) + s * (subnormal unit) / 2.
void CheckFp8RoundTrip(Format f, int mbits, double sub_unit) {
  for (uint32_t B : {32u, 64u, 100u}) {
    const WireSpec spec{f, B};
    std::vector<float> x = Wide(4 * B + 5, B, B + 1);
    const std::vector<uint8_t> w = Enc(spec, x);
    const std::vector<float> y = Dec(spec, w, x.size());
    for (size_t b = 0; b * B < x.size(); ++b) {
      const double s = std::bit_cast<float>(ScaleBits(w, b));
      for (size_t i = b * B; i < std::min(x.size(), (b + 1) * B); ++i) {
        const double bound = std::fabs(x[i]) * std::ldexp(1.0, -(mbits + 1)) * (1 + 1e-6) +
                             s * sub_unit / 2 + std::fabs(x[i]) * 0x1p-20;
        ASSERT_LE(std::fabs(double(x[i]) - y[i]), bound) << FormatName(f) << " " << i;
      }
    }
  }
}

TEST(Fp8Reference, RoundTripBounds) {
  CheckFp8RoundTrip(Format::kFp8E4M3Block, 3, 0x1p-9);
  CheckFp8RoundTrip(Format::kFp8E5M2Block, 2, 0x1p-16);
}

TEST(Fp8Reference, ScalesSaturationAndSpecials) {
  const std::vector<float> x = {448.0f, -448.0f, 1.0f, -0.0001f, NAN, 416.0f, -INFINITY,
                                INFINITY};
  const WireSpec e4{Format::kFp8E4M3Block, 4};
  const std::vector<uint8_t> w = Enc(e4, x);
  EXPECT_EQ(ScaleBits(w, 0), Bits(1.0f));
  EXPECT_EQ(ScaleBits(w, 1), Bits(1.0f) | 0x80000000u);  // a = 416, Q = 416
  const uint8_t want[8] = {0x7E, 0xFE, 0x38, 0x00, 0x7F, 0x7D, 0xFE, 0x7E};  // -0.0001 -> +0
  for (int i = 0; i < 8; ++i) EXPECT_EQ(w[8 + i], want[i]) << i;
  const std::vector<float> y = Dec(e4, w, x.size());
  EXPECT_EQ(y[0], 448.0f);
  EXPECT_EQ(Bits(y[3]), 0u);
  EXPECT_EQ(Bits(y[4]), 0x7FC00000u);
  EXPECT_EQ(y[5], 416.0f);
  EXPECT_EQ(y[6], -INFINITY);
  EXPECT_EQ(y[7], INFINITY);
  const WireSpec e5{Format::kFp8E5M2Block, 4};
  const std::vector<uint8_t> w5 = Enc(e5, {57344.0f, -1.0f, 0.0f, 3.0f, NAN, INFINITY, -INFINITY, 2.0f});
  EXPECT_EQ(ScaleBits(w5, 0), Bits(1.0f));
  EXPECT_EQ(ScaleBits(w5, 1), Bits(2.0f / 57344.0f) | 0x80000000u);
  EXPECT_EQ(std::vector<uint8_t>(w5.begin() + 8, w5.begin() + 10), (std::vector<uint8_t>{0x7B, 0xBC}));
  EXPECT_EQ(std::vector<uint8_t>(w5.begin() + 12, w5.begin() + 16),
            (std::vector<uint8_t>{0x7F, 0x7C, 0xFC, 0x7B}));
  // A flagged block of only non-finite values: scale 0 flagged, specials still decode.
  const std::vector<float> yn = Dec(e5, Enc(e5, {NAN, INFINITY, -INFINITY, NAN}), 4);
  EXPECT_EQ(yn[1], INFINITY);
  EXPECT_EQ(yn[2], -INFINITY);
  EXPECT_EQ(Bits(yn[0]), 0x7FC00000u);
}

TEST(Fp8Reference, TinyAbsmaxFlushAt2ToMinus110) {
  for (Format f : {Format::kFp8E4M3Block, Format::kFp8E5M2Block}) {
    const WireSpec spec{f, 2};
    const std::vector<float> x = {std::nextafter(0x1p-110f, 0.0f), -1e-34f, 0x1p-110f, 0.0f};
    const std::vector<uint8_t> w = Enc(spec, x);
    EXPECT_EQ(ScaleBits(w, 0), 0u);
    EXPECT_NE(ScaleBits(w, 1), 0u);
    EXPECT_EQ(w[8], 0);
    EXPECT_EQ(w[9], 0);
    const std::vector<float> y = Dec(spec, w, 4);
    EXPECT_NEAR(y[2], 0x1p-110f, 0x1p-130f) << FormatName(f);
    EXPECT_EQ(Bits(y[0]), 0u);
  }
}

// The block format table against the public codecs: every Codec is carried by exactly one
// row, the codec's public traits (code bits, integer codes) agree with its row, and the wire
// size, name and parameters of each row are what the library reports.
TEST(FormatTable, EveryCodecHasOneRowThatAgreesWithItsTraits) {
  size_t n = 0;
  const EnumInfo* codecs = CodecTable(&n);
  ASSERT_EQ(n, std::size(kBlockFormats));
  for (size_t i = 0; i < n; ++i) {
    const Codec c = Codec(codecs[i].id);
    SCOPED_TRACE(std::string(codecs[i].name));
    const BlockFormatInfo& row = BlockInfoOf(c);
    EXPECT_EQ(row.codec, c);
    EXPECT_EQ(std::count_if(std::begin(kBlockFormats), std::end(kBlockFormats),
                            [&](const BlockFormatInfo& r) { return r.codec == c; }),
              1);
    EXPECT_EQ(TraitsOf(c).code_bits, row.bits);
    EXPECT_EQ(TraitsOf(c).integer, row.mbits == 0);
    EXPECT_EQ(SupportsStochasticRounding(c), row.mbits == 0);
    EXPECT_STREQ(FormatName(row.format), row.name);
    EXPECT_EQ(BlockInfoOf(row.format), &row);
    EXPECT_LE(row.q_flag, row.q);
    // 3 blocks of 16 and a tail of 5: f32 scales, then the packed codes.
    EXPECT_EQ(WireBytes({row.format, 16}, 53), 4 * 4 + (53 * row.bits + 7) / 8);
  }
  for (Format raw : {Format::kRawF32, Format::kRawBF16, Format::kRawF16, Format::kRawE5M2})
    EXPECT_EQ(BlockInfoOf(raw), nullptr) << FormatName(raw);
}

TEST(BlockReference, FusedKernelsEqualTheirComposition) {
  for (const BlockFormatInfo& row : kBlockFormats)
    for (uint8_t scale : {kScaleF32, kScaleTwoLevel}) {
      const Format f = row.format;
      if (scale == kScaleTwoLevel && row.mbits != 0) continue;
      for (uint8_t r : {kRoundNearestEven, kRoundStochastic}) {
      WireSpec spec{f, 64, r, 5, 9, 1000};
      spec.scale = scale;
      const size_t n = 3 * 64 + 11;
      std::vector<float> x = Wide(n, 64, 3), local = Wide(n, 64, 4);
      x[70] = INFINITY;
      local[5] = NAN;
      const std::vector<uint8_t> w = Enc(spec, x);
      std::vector<float> acc(n);
      ref::DecodeAccumulate(spec, w.data(), n, DType::kFloat32, local.data(), acc.data());
      std::vector<uint8_t> fused(w.size());
      EncodeStats s1, s2;
      ref::DecodeAccumulateEncode(spec, w.data(), n, DType::kFloat32, local.data(),
                                  fused.data(), &s1);
      EXPECT_EQ(fused, Enc(spec, acc, &s2)) << FormatName(f) << " scale " << int(scale);
      EXPECT_EQ(s1.clipped, s2.clipped);
      EXPECT_EQ(s1.sum_sq_err_est, s2.sum_sq_err_est);
      EXPECT_EQ(s1.max_abs_err_est, s2.max_abs_err_est);
      }
    }
}

// The worked examples of docs/wire_format.md, byte for byte.
// docs/wire_format.md, "Scale storage": int8, B = 2, bf16 scale, one block [3.0, -1.5].
TEST(BlockReference, WorkedExampleOfTheBf16Scale) {
  WireSpec spec{Format::kInt8Block, 2};
  spec.scale = kScaleBF16;
  const float x[2] = {3.0f, -1.5f};
  std::vector<uint8_t> w(WireBytes(spec, 2));
  ASSERT_EQ(w.size(), 4u);
  ref::Encode(spec, DType::kFloat32, x, 2, w.data());
  EXPECT_EQ(w, (std::vector<uint8_t>{0xC2, 0x3C, 0x7F, 0xC1}));
  float y[2];
  ref::Decode(spec, w.data(), 2, DType::kFloat32, y);
  EXPECT_EQ(y[0], 3.0075684f);
  EXPECT_EQ(y[1], -1.4919434f);
  Encode(spec, DType::kFloat32, x, 2, w.data());  // the dispatched kernel: the same bytes
  EXPECT_EQ(w, (std::vector<uint8_t>{0xC2, 0x3C, 0x7F, 0xC1}));
}

TEST(BlockReference, WorkedExamplesOfTheWireFormatDoc) {
  struct Example {
    WireSpec spec;
    float x6;
    std::vector<uint8_t> wire;
    std::vector<uint32_t> decoded;
  };
  const Example examples[] = {
      {{Format::kInt4Block, 4}, -0.3f,
       {0xB7, 0x6D, 0xDB, 0x3E, 0xAB, 0xAA, 0x2A, 0xBE, 0xD1, 0x57, 0x68, 0x0E},
       {0x3EDB6DB7, 0xBFA49249, 0x40400000, 0x40092492, 0x7FC00000, 0x3F800000, 0xBEAAAAAB}},
      {{Format::kInt6Block, 4}, -0.3f,
       {0x8C, 0x31, 0xC6, 0x3D, 0x89, 0x88, 0x08, 0xBD, 0xC5, 0xFC, 0x55, 0xA0, 0x77, 0x03},
       {0x3EF7BDEF, 0xBFA10842, 0x40400000, 0x40021084, 0x7FC00000, 0x3F800000, 0xBE99999A}},
      {{Format::kInt5Block, 4}, -0.3f,
       {0xCD, 0xCC, 0x4C, 0x3E, 0x25, 0x49, 0x92, 0xBD, 0x42, 0x3F, 0x05, 0x1D, 0x07},
       {0x3ECCCCCD, 0xBF99999A, 0x40400000, 0x40000000, 0x7FC00000, 0x3F800000, 0xBE924925}},
      {{Format::kFp8E4M3Block, 4}, -INFINITY,
       {0xB7, 0x6D, 0xDB, 0x3B, 0xD9, 0x89, 0x1D, 0xBB, 0x69, 0xF4, 0x7E, 0x79, 0x7F, 0x7D, 0xFE},
       {0x3EF6DB6E, 0xBFA49249, 0x40400000, 0x3FF6DB6E, 0x7FC00000, 0x3F800000, 0xFF800000}},
      {{Format::kFp8E5M2Block, 4}, -INFINITY,
       {0xB7, 0x6D, 0x5B, 0x38, 0x25, 0x49, 0x92, 0xB7, 0x71, 0xF6, 0x7B, 0x79, 0x7F, 0x7B, 0xFC},
       {0x3F092492, 0xBFA49249, 0x40400000, 0x40092492, 0x7FC00000, 0x3F800000, 0xFF800000}},
  };
  for (const Example& e : examples) {
    const std::vector<float> x = {0.5f, -1.25f, 3.0f, 2.0f, NAN, 1.0f, e.x6};
    EXPECT_EQ(Enc(e.spec, x), e.wire) << FormatName(e.spec.format);
    const std::vector<float> y = Dec(e.spec, e.wire, x.size());
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(Bits(y[i]), e.decoded[i]) << FormatName(e.spec.format) << " " << i;
  }
  const WireSpec sr{Format::kInt8Block, 4, kRoundStochastic, 1, 2, 100};
  const std::vector<uint8_t> want = {0x06, 0x83, 0xC1, 0x3C, 0x15, 0xCB, 0x7F, 0x54};
  EXPECT_EQ(Enc(sr, {0.5f, -1.25f, 3.0f, 2.0f}), want);
}

// ---- Stochastic rounding ---------------------------------------------------------------------

TEST(StochasticRounding, ReproducibleAndIndependentOfTheSegmentCut) {
  const std::vector<float> x = Wide(64 * 20 + 7, 64, 8);
  for (Format f : {Format::kInt8Block, Format::kInt4Block}) {
    const WireSpec spec{f, 64, kRoundStochastic, 42, 3, 1 << 20};
    const std::vector<uint8_t> a = Enc(spec, x), b = Enc(spec, x);
    EXPECT_EQ(a, b);
    WireSpec other = spec;
    other.seed = 43;
    EXPECT_NE(Enc(other, x), a);
    other = spec;
    other.stream = 4;
    EXPECT_NE(Enc(other, x), a);
    EXPECT_NE(Enc({f, 64}, x), a);
    // Two segments with the right absolute offsets decode to the same values.
    const size_t cut = 64 * 7;
    WireSpec tail = spec;
    tail.offset = spec.offset + cut;
    const std::vector<float> x0(x.begin(), x.begin() + cut), x1(x.begin() + cut, x.end());
    const std::vector<float> yw = Dec(spec, a, x.size());
    const std::vector<float> y0 = Dec(spec, Enc(spec, x0), x0.size());
    const std::vector<float> y1 = Dec(tail, Enc(tail, x1), x1.size());
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(Bits(yw[i]), Bits(i < cut ? y0[i] : y1[i - cut])) << i;
  }
}

TEST(StochasticRounding, UnbiasedWhereNearestEvenIsBiased) {
  // Each block: one element = Q (so s = inv = 1) and B-1 elements = 0.3. Nearest even codes
  // 0.3 as 0 (mean error -0.3); stochastic rounding gives 1 with probability 0.3.
  for (Format f : {Format::kInt8Block, Format::kInt4Block}) {
    const float q = f == Format::kInt8Block ? 127.0f : 7.0f;
    const size_t B = 64, nb = 4000;
    std::vector<float> x(B * nb, 0.3f);
    for (size_t b = 0; b < nb; ++b) x[b * B] = q;
    const WireSpec rne{f, uint32_t(B)};
    const WireSpec sr{f, uint32_t(B), kRoundStochastic, 2024, 1, 0};
    double err_rne = 0, err_sr = 0;
    size_t cnt = 0;
    const std::vector<float> yr = Dec(rne, Enc(rne, x), x.size());
    const std::vector<float> ys = Dec(sr, Enc(sr, x), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      if (i % B == 0) continue;
      err_rne += double(yr[i]) - x[i];
      err_sr += double(ys[i]) - x[i];
      ++cnt;
    }
    err_rne /= double(cnt);
    err_sr /= double(cnt);
    const double sigma = std::sqrt(0.3 * 0.7);
    EXPECT_NEAR(err_rne, -0.3, 1e-6) << FormatName(f);
    EXPECT_LT(std::fabs(err_sr), 3 * sigma / std::sqrt(double(cnt))) << FormatName(f);
  }
  // Random N(0,1) data: the mean signed error over 1M elements is ~0 as well.
  std::vector<float> x = Wide(1 << 20, 128, 77);
  for (float& v : x) v = std::fabs(v) * 0.01f + 1.0f;  // all positive: RNE biases would add up
  const WireSpec sr{Format::kInt8Block, 128, kRoundStochastic, 7, 0, 0};
  const std::vector<uint8_t> w = Enc(sr, x);
  const std::vector<float> y = Dec(sr, w, x.size());
  double sum = 0, sum2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = double(y[i]) - x[i];
    sum += e;
    sum2 += e * e;
  }
  const double mean = sum / x.size(), sd = std::sqrt(sum2 / x.size());
  EXPECT_LT(std::fabs(mean), 3 * sd / std::sqrt(double(x.size())));
}

TEST(StochasticRounding, Fp8IgnoresTheRoundingField) {
  const std::vector<float> x = Wide(300, 64, 5);
  for (Format f : {Format::kFp8E4M3Block, Format::kFp8E5M2Block})
    EXPECT_EQ(Enc({f, 64, kRoundStochastic, 1, 2, 3}, x), Enc({f, 64}, x));
}

// ---- Telemetry ---------------------------------------------------------------------------------

TEST(Telemetry, PerBlockModelAndClipCount) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd;
  std::vector<float> x(64 * 10);
  for (float& v : x) v = nd(rng);
  for (Format f : {Format::kInt8Block, Format::kInt4Block, Format::kFp8E4M3Block,
                   Format::kFp8E5M2Block}) {
    for (uint8_t r : {kRoundNearestEven, kRoundStochastic}) {
      const WireSpec spec{f, 64, r, 1, 2, 3};
      EncodeStats st;
      const std::vector<uint8_t> w = Enc(spec, x, &st);
      EXPECT_EQ(w, Enc(spec, x));  // telemetry does not change the bytes
      const bool sr = r == kRoundStochastic &&
                      (f == Format::kInt8Block || f == Format::kInt4Block);
      const double step = f == Format::kFp8E4M3Block ? 32 : f == Format::kFp8E5M2Block ? 8192 : 1;
      double sq = 0, mx = 0;
      for (size_t b = 0; b < 10; ++b) {
        const double e = step * std::bit_cast<float>(ScaleBits(w, b));
        sq += 64 * e * e / (sr ? 6 : 12);
        mx = std::max(mx, sr ? e : e / 2);
      }
      EXPECT_NEAR(st.sum_sq_err_est, sq, sq * 1e-6) << FormatName(f);
      EXPECT_NEAR(st.max_abs_err_est, mx, mx * 1e-6) << FormatName(f);
      // The model bounds the measured error.
      const std::vector<float> y = Dec(spec, w, x.size());
      double real_sq = 0, real_max = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double e = std::fabs(double(x[i]) - y[i]);
        real_sq += e * e;
        real_max = std::max(real_max, e);
      }
      EXPECT_LE(real_max, st.max_abs_err_est * (1 + 1e-5)) << FormatName(f);
      if (f == Format::kInt8Block || f == Format::kInt4Block) {
        EXPECT_NEAR(real_sq, st.sum_sq_err_est, 0.25 * st.sum_sq_err_est) << FormatName(f);
      } else {
        EXPECT_LE(real_sq, st.sum_sq_err_est) << FormatName(f);
      }
      EXPECT_LE(st.clipped, 10u);  // at most an edge ulp per block
      // The values and their sum of squares (f64, element order).
      double vsq = 0;
      for (float v : x) vsq += double(v) * double(v);
      EXPECT_EQ(st.values, x.size());
      EXPECT_NEAR(st.sum_sq_values, vsq, vsq * 1e-12) << FormatName(f);
    }
  }
  // Accumulates across calls; counts |x*inv| > Q exactly.
  EncodeStats st;
  const WireSpec spec{Format::kInt8Block, 4};
  Enc(spec, {1.0f, 2.0f, 3.0f, 4.0f}, &st);
  const uint64_t c1 = st.clipped;
  const double sq1 = st.sum_sq_err_est;
  Enc(spec, {1.0f, 2.0f, 3.0f, 4.0f}, &st);
  EXPECT_EQ(st.clipped, 2 * c1);
  EXPECT_EQ(st.sum_sq_err_est, 2 * sq1);
  EXPECT_EQ(c1, 0u);  // 4 * (127/4) == 127 exactly
  // An absmax whose f32 product a * (Q / a) lands an ulp above Q counts as one clip.
  float a = 1.0f;
  while (!(a * (127.0f / a) > 127.0f) && a < 2.0f) a = std::nextafter(a, 2.0f);
  ASSERT_LT(a, 2.0f);
  EncodeStats st2;
  Enc(spec, {a, 0.5f, -a, 0.25f}, &st2);
  EXPECT_EQ(st2.clipped, 2u);
}

}  // namespace
}  // namespace equarx::codec
