// tests/tools — half conversions, generators (deterministic, chunk-independent, right
// moments), error statistics on hand cases, and the argument parser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "half.h"
#include "random.h"
#include "stats.h"

namespace equarx::tools {
namespace {

float F(uint32_t bits) { float f; std::memcpy(&f, &bits, 4); return f; }

TEST(Half, BF16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBF16(F(0x3F808000)), 0x3F80);  // tie -> even (down)
  EXPECT_EQ(F32ToBF16(F(0x3F818000)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(F32ToBF16(F(0x3F808001)), 0x3F81);
  EXPECT_EQ(F32ToBF16(F(0x7F7FFFFF)), 0x7F80);  // overflow -> Inf
  EXPECT_EQ(F32ToBF16(-INFINITY), 0xFF80);
  EXPECT_EQ(F32ToBF16(NAN) & 0x7FC0, 0x7FC0);
  EXPECT_EQ(BF16ToF32(0x4049), F(0x40490000));
}

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = F16ToF32(uint16_t(h));
    if (std::isnan(f)) { EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f)))); continue; }
    EXPECT_EQ(F32ToF16(f), h) << std::hex << h;
  }
  EXPECT_EQ(F16ToF32(0x3C00), 1.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);      // tie -> even (0)
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);      // 1.5 ulp -> 2
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie -> even
}

TEST(Half, F64RoundingIsDirect) {
  // 1 + 2^-8 + 2^-30 is just above a bf16 tie: direct rounding goes up; rounding through
  // f32 would first drop 2^-30... (f32 keeps it: 2^-30 needs 31 bits, f32 has 24 -> dropped
  // -> exact tie -> even -> 1.0). Direct rounding must give 1 + 2^-7.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(double(BF16ToF32(F32ToBF16(float(x)))), 1.0);
  EXPECT_EQ(RoundF64ToBF16(x), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(RoundF64ToF16(65520.0), INFINITY);
  EXPECT_EQ(RoundF64ToF16(-65519.0), -65504.0);
  EXPECT_EQ(RoundF64ToF16(std::ldexp(1.0, -25)), 0.0);
  EXPECT_EQ(RoundF64ToBF16(1e39), INFINITY);
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const float f = BF16ToF32(uint16_t(h));
    if (std::isfinite(f)) {
      EXPECT_EQ(RoundF64ToBF16(double(f)), double(f));
    }
  }
}

// The timing summaries of the benchmarks: the median, and the p99 by nearest rank (the
// smallest value at least 99% of the samples do not exceed), worked out by hand.
TEST(Stats, MedianAndPercentile) {
  EXPECT_EQ(Median({}), 0.0);
  EXPECT_EQ(Median({3, 1, 2}), 2.0);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, shuffled order does not matter
  EXPECT_EQ(Percentile(v, 0.99), 99.0);
  EXPECT_EQ(Percentile(v, 0.5), 50.0);
  EXPECT_EQ(Percentile(v, 1.0), 100.0);
  v.push_back(1000);  // 101 samples: ceil(0.99 * 101) = 100th smallest
  EXPECT_EQ(Percentile(v, 0.99), 100.0);
  EXPECT_EQ(Percentile({7}, 0.99), 7.0);
  EXPECT_EQ(Percentile({}, 0.99), 0.0);
}

TEST(Random, DeterministicAndChunkIndependent) {
  for (Distribution d : {Distribution::kNormal, Distribution::kUniform, Distribution::kHeavyTailed,
                         Distribution::kInteger}) {
    GenSpec spec;
    spec.dist = d;
    spec.seed = 42;
    spec.stream = 3;
    spec.cols = 256;
    std::vector<float> a(10001), b(10001);
    Generate(spec, 0, a.size(), a.data());
    Generate(spec, 0, 17, b.data());
    Generate(spec, 17, 5000, b.data() + 17);
    Generate(spec, 5017, b.size() - 5017, b.data() + 5017);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << DistributionName(d);
    spec.stream = 4;
    Generate(spec, 0, b.size(), b.data());
    EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "streams differ";
  }
}

TEST(Random, KnownValuesAreStable) {
  // Pins the generator: if these change, every number in docs/accuracy.md changes too.
  GenSpec spec;
  spec.seed = 1;
  float v[4];
  Generate(spec, 0, 4, v);
  EXPECT_FLOAT_EQ(v[0], 0.19415462f);
  EXPECT_FLOAT_EQ(v[1], 0.501216173f);
  uint64_t h = 0;
  for (float f : v) { uint32_t u; std::memcpy(&u, &f, 4); h = Mix64(h ^ u); }
  // Exact bits (the last bit of a libm log/cos could in principle differ between C libraries;
  // float rounding of an f64 result makes that practically impossible).
  EXPECT_EQ(h, 0xB17A2D1EB6E34F2Eull);
  spec.dist = Distribution::kUniform;
  Generate(spec, 0, 2, v);
  EXPECT_EQ(v[0], 0.730984509f);
  EXPECT_EQ(v[1], -0.617637336f);
  EXPECT_EQ(Mix64(0), 0u);
  EXPECT_EQ(Mix64(1), 0x5692161D100B05E5ull);
}

TEST(Random, Moments) {
  const size_t n = 1 << 20;
  std::vector<float> v(n);
  GenSpec spec;
  spec.seed = 7;
  Generate(spec, 0, n, v.data());
  double s = 0, s2 = 0, s4 = 0;
  for (float x : v) { s += x; s2 += double(x) * x; s4 += double(x) * x * x * x; }
  EXPECT_NEAR(s / n, 0.0, 0.005);
  EXPECT_NEAR(s2 / n, 1.0, 0.005);
  EXPECT_NEAR(s4 / n, 3.0, 0.05);  // Gaussian kurtosis

  spec.dist = Distribution::kUniform;
  Generate(spec, 0, n, v.data());
  double lo = 1, hi = -1;
  s = s2 = 0;
  for (float x : v) { s += x; s2 += double(x) * x; lo = std::min(lo, double(x)); hi = std::max(hi, double(x)); }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(s2 / n, 1.0 / 3.0, 0.003);

  spec.dist = Distribution::kInteger;
  spec.int_range = 4;
  Generate(spec, 0, n, v.data());
  std::vector<size_t> hist(9);
  for (float x : v) {
    ASSERT_EQ(x, std::round(x));
    ASSERT_GE(x, -4);
    ASSERT_LE(x, 4);
    ++hist[size_t(x + 4)];
  }
  for (size_t c : hist) EXPECT_NEAR(double(c) / n, 1.0 / 9, 0.003);
}

TEST(Random, HeavyTailedHasSharedOutlierChannelsAndSpikes) {
  const size_t cols = 4096, rows = 256;
  size_t outlier_cols = 0;
  for (size_t c = 0; c < cols; ++c) {
    const double s = HeavyTailedChannelScale(9, c);
    if (s != 1.0) {
      ++outlier_cols;
      EXPECT_GE(s, 50.0);
      EXPECT_LT(s, 100.0);
    }
  }
  EXPECT_GT(outlier_cols, 8u);   // ~0.5% of 4096 = 20
  EXPECT_LT(outlier_cols, 40u);
  GenSpec spec;
  spec.dist = Distribution::kHeavyTailed;
  spec.seed = 9;
  spec.cols = cols;
  std::vector<float> v(rows * cols);
  Generate(spec, 0, v.size(), v.data());
  size_t spikes = 0;
  float amax = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (HeavyTailedChannelScale(9, i % cols) == 1.0 && std::fabs(v[i]) >= 100) ++spikes;
    amax = std::max(amax, std::fabs(v[i]));
  }
  EXPECT_GT(spikes, 40u);  // 1e-4 of 1M = ~105
  EXPECT_LT(spikes, 200u);
  EXPECT_GT(amax, 100.0f);
  EXPECT_LE(amax, 1000.0f);
}

TEST(Random, XoshiroDeterministic) {
  Xoshiro256 a(5), b(5), c(6);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    EXPECT_NE(x, c.Next());
  }
}

TEST(Stats, HandCases) {
  const double ref[] = {1.0, 2.0, -3.0, 0.0};
  const float got[] = {1.0f, 2.5f, -3.0f, -1.0f};
  ErrorStats s = CompareArrays(ref, got, 4);
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.wrong, 2u);
  EXPECT_DOUBLE_EQ(s.mse, (0.25 + 1.0) / 4);
  EXPECT_DOUBLE_EQ(s.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(s.rel_rms, std::sqrt(1.25 / 14.0));

  const double same[] = {5, -7};
  const float exact[] = {5, -7};
  s = CompareArrays(same, exact, 2);
  EXPECT_EQ(s.wrong, 0u);
  EXPECT_EQ(s.mse, 0.0);
  EXPECT_EQ(s.rel_rms, 0.0);

  const double nf_ref[] = {NAN, INFINITY, -INFINITY, 1.0, INFINITY};
  const float nf_got[] = {NAN, INFINITY, INFINITY, NAN, 3.0f};
  s = CompareArrays(nf_ref, nf_got, 5);
  EXPECT_EQ(s.wrong, 3u);
  EXPECT_EQ(s.nonfinite_mismatch, 3u);
  EXPECT_EQ(s.finite, 0u);
  EXPECT_EQ(s.mse, 0.0);

  ErrorAccumulator a, b, all;
  for (int i = 0; i < 10; ++i) {
    (i < 4 ? a : b).Add(i, i + 0.5 * i);
    all.Add(i, i + 0.5 * i);
  }
  a.Merge(b);
  EXPECT_DOUBLE_EQ(a.Finish().mse, all.Finish().mse);
  EXPECT_EQ(a.Finish().max_abs, 4.5);
}

TEST(Args, ParsesOptionsAndPositionals) {
  std::string algo = "full";
  size_t size = 0;
  uint64_t n = 3;
  bool quick = false;
  ArgParser p("tool", "[options] FILES...");
  p.TakePositional();
  p.AddString("algo", &algo, "algorithm", "A");
  p.AddSize("size", &size, "elements");
  p.AddUint("ranks", &n, "ranks");
  p.AddFlag("quick", &quick, "quick run");
  const char* argv[] = {"tool", "a.npy", "--algo", "semi", "--size=16M", "--quick", "--ranks", "5", "--", "--b.npy"};
  ASSERT_TRUE(p.Parse(10, argv).ok());
  EXPECT_EQ(algo, "semi");
  EXPECT_EQ(size, 16u << 20);
  EXPECT_EQ(n, 5u);
  EXPECT_TRUE(quick);
  EXPECT_TRUE(p.seen("algo"));
  EXPECT_EQ(p.positional(), (std::vector<std::string>{"a.npy", "--b.npy"}));
  EXPECT_NE(p.Help().find("--algo A"), std::string::npos);
}

// A tool that takes no positional arguments refuses them, and a value after a boolean flag
// (`--quick 0`, which would otherwise leave the flag at its default) says how to write it.
TEST(Args, RefusesPositionalsUnlessTaken) {
  bool quick = true;
  size_t size = 0;
  ArgParser p("tool", "[options]");
  p.AddFlag("quick", &quick, "quick run");
  p.AddSize("size", &size, "elements");
  const char* stray[] = {"tool", "--size", "4K", "extra"};
  const Status s1 = p.Parse(4, stray);
  EXPECT_EQ(s1.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s1.message().find("unexpected argument 'extra'"), std::string::npos) << s1.message();
  ArgParser q("tool", "[options]");
  q.AddFlag("quick", &quick, "quick run");
  const char* flag_value[] = {"tool", "--quick", "0"};
  const Status s2 = q.Parse(3, flag_value);
  EXPECT_EQ(s2.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s2.message().find("--quick takes no value; write --quick=0"), std::string::npos) << s2.message();
  ArgParser r("tool", "[options]");
  r.AddFlag("quick", &quick, "quick run");
  const char* cleared[] = {"tool", "--quick=0"};
  ASSERT_TRUE(r.Parse(2, cleared).ok());
  EXPECT_FALSE(quick);
}

// What a tool's main does with its command line: 2 and a message naming the program on a bad
// argument, 0 and the help (with the tool's extra text) on --help, nothing otherwise.
TEST(Args, ParseCommandLineExitCodesAndMessages) {
  size_t size = 0;
  auto parser = [&] {
    auto p = std::make_unique<ArgParser>("equarx-x", "[options]");
    p->AddSize("size", &size, "elements");
    return p;
  };
  const char* bogus[] = {"equarx-x", "--bogus"};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(parser()->ParseCommandLine(2, bogus), std::optional<int>(2));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("equarx-x: unknown option '--bogus'"), std::string::npos) << err;
  EXPECT_NE(err.find("run equarx-x --help"), std::string::npos) << err;
  const char* help[] = {"equarx-x", "--help"};
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(parser()->ParseCommandLine(2, help, "EXTRA TEXT\n"), std::optional<int>(0));
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("--size N"), std::string::npos) << out;
  EXPECT_NE(out.find("EXTRA TEXT"), std::string::npos) << out;
  const char* good[] = {"equarx-x", "--size", "3K"};
  EXPECT_EQ(parser()->ParseCommandLine(3, good), std::nullopt);
  EXPECT_EQ(size, 3072u);
}

// Two options of one name would leave the second dead while --help lists it: a tool's bug,
// stopped when the second is registered.
TEST(ArgsDeathTest, AnOptionRegisteredTwiceAborts) {
  uint64_t a = 0, b = 0;
  EXPECT_DEATH({
    ArgParser p("equarx-x", "");
    p.AddUint("threads", &a, "one");
    p.AddUint("threads", &b, "two");
  }, "equarx-x: option --threads registered twice");
  EXPECT_DEATH({
    bool h = false;
    ArgParser p("equarx-x", "");
    p.AddFlag("help", &h, "the parser's own");
  }, "option --help registered twice");
}

TEST(Args, Errors) {
  size_t size = 0;
  ArgParser p("tool", "");
  p.AddSize("size", &size, "elements");
  const char* unknown[] = {"tool", "--bogus"};
  Status s = p.Parse(2, unknown);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--bogus"), std::string::npos);
  ArgParser q("tool", "");
  q.AddSize("size", &size, "elements");
  const char* missing[] = {"tool", "--size"};
  EXPECT_NE(q.Parse(2, missing).message().find("needs a value"), std::string::npos);
  ArgParser r("tool", "");
  r.AddSize("size", &size, "elements");
  const char* bad[] = {"tool", "--size", "12Q"};
  EXPECT_FALSE(r.Parse(3, bad).ok());
  ArgParser h("tool", "");
  const char* help[] = {"tool", "--help"};
  ASSERT_TRUE(h.Parse(2, help).ok());
  EXPECT_TRUE(h.help_requested());
  EXPECT_EQ(ParseSize("4K"), 4096u);
  EXPECT_EQ(ParseSize("1G"), size_t(1) << 30);
  EXPECT_FALSE(ParseSize("").has_value());
  EXPECT_FALSE(ParseSize("K").has_value());
  EXPECT_FALSE(ParseSize("99999999999999999999999").has_value());
  EXPECT_FALSE(ParseSize("-1").has_value());
}

}  // namespace
}  // namespace equarx::tools
