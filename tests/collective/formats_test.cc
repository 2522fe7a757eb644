// The AllReduce with every codec (int8, int4, fp8 e4m3/e5m2), stochastic rounding, encode
// telemetry and error feedback, against f64 oracles:
//   - every codec x algorithm x phases: ranks bitwise identical, each element within the
//     analytic bound of its codec (support/oracle.cc), on every SIMD target the same bits;
//   - stochastic rounding: the same seed gives the same bits, another seed other bits, and
//     the mean over seeds converges to the exact sum (unbiased) where nearest rounding stays
//     biased;
//   - telemetry: the values counted are the values encoded; the RMS estimate matches the
//     real loss of the encodes (measured through error feedback);
//   - error feedback: residuals + result conserve the sum exactly up to f32 rounding, and the
//     mean of repeated calls converges to the exact sum.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

struct Config {
  Algorithm algo;
  Phases phases;
};

const Config kConfigs[] = {
    {Algorithm::kFull, Phases::kRS},      {Algorithm::kFull, Phases::kAG},
    {Algorithm::kFull, Phases::kRSAG},    {Algorithm::kFullBidir, Phases::kRSAG},
    {Algorithm::kSemi, Phases::kRS},      {Algorithm::kSemi, Phases::kRSAG},
    {Algorithm::kTwoShot, Phases::kRS},   {Algorithm::kTwoShot, Phases::kAG},
    {Algorithm::kTwoShot, Phases::kRSAG},
};

struct Wire {
  Codec codec;
  Rounding rounding;
};
// Every codec of the library's table, rounded to nearest, and stochastically where it has
// integer codes; int8 to nearest, the other collective tests' subject, is left out here.
std::vector<Wire> Wires() {
  std::vector<Wire> wires;
  size_t n = 0;
  const EnumInfo* codecs = CodecTable(&n);
  for (size_t i = 0; i < n; ++i) {
    const Codec c = Codec(codecs[i].id);
    if (c != Codec::kInt8) wires.push_back({c, Rounding::kNearest});
    if (SupportsStochasticRounding(c)) wires.push_back({c, Rounding::kStochastic});
  }
  return wires;
}

AllReduceOptions Options(const Config& c, const Wire& w, uint64_t seed = 1) {
  AllReduceOptions o;
  o.algorithm = c.algo;
  o.phases = c.phases;
  o.codec = w.codec;
  o.rounding = w.rounding;
  o.seed = seed;
  o.block = 64;
  return o;
}

std::string Name(const AllReduceOptions& o) {
  return std::string(AlgorithmName(o.algorithm)) + "/" + std::string(PhasesName(o.phases)) + "/" +
         std::string(CodecName(o.codec)) + "/" + std::string(RoundingName(o.rounding));
}

std::vector<Buffer> Reduce(const std::vector<Buffer>& in, const AllReduceOptions& o, bool in_place,
                           std::vector<std::vector<float>>* residuals = nullptr,
                           std::vector<AllReduceStats>* stats = nullptr) {
  return ReduceAll(in, o, in_place, residuals, stats);
}

void ExpectWithinBound(const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                       const AllReduceOptions& o, const std::string& what) {
  ExpectAgreeAndWithinBound(in, out, o, what);
}

TEST(Formats, WithinErrorBoundAndIdenticalOnEveryRank) {
  for (const Wire& w : Wires())
    for (const Config& c : kConfigs)
      for (int n : {1, 2, 3, 5, 8})
        for (size_t count : {size_t(0), size_t(1), size_t(63), size_t(65), size_t(n) * 64 - 1, size_t(7919)}) {
          const DType dt = (count % 2) ? DType::kBFloat16 : DType::kFloat32;
          auto in = MakeInputs(n, count, dt, 3 + n * 17 + count);
          const AllReduceOptions o = Options(c, w, count);
          auto out = Reduce(in, o, count == 63);
          ExpectWithinBound(in, out, o, Name(o) + " n=" + std::to_string(n) + " count=" + std::to_string(count));
        }
}

TEST(Formats, LargeTensorAndOtherBlocks) {
  auto in = MakeInputs(4, 200003, DType::kBFloat16, 41);
  for (const Wire& w : Wires())
    for (size_t block : {32, 256})
      for (const Config& c : {Config{Algorithm::kFullBidir, Phases::kRSAG}, Config{Algorithm::kSemi, Phases::kRSAG},
                              Config{Algorithm::kTwoShot, Phases::kRSAG}}) {
        AllReduceOptions o = Options(c, w, 5);
        o.block = block;
        o.microshards = 3;
        ExpectWithinBound(in, Reduce(in, o, false), o, Name(o) + " block=" + std::to_string(block));
      }
}

// bf16 scales: every codec and algorithm within its bound (the step grows by < 2^-7), ranks
// identical, and two bytes less per block on the wire than f32 scales.
TEST(Formats, Bf16ScalesWithinBoundAndSmaller) {
  for (Codec codec : {Codec::kInt8, Codec::kInt6, Codec::kInt5, Codec::kInt4, Codec::kFp8E4M3, Codec::kFp8E5M2})
    for (const Config& c : kConfigs)
      for (int n : {2, 3, 5})
        for (size_t block : {16, 32, 100}) {
          const size_t count = 3001;
          auto in = MakeInputs(n, count, DType::kBFloat16, 7 + n + block);
          AllReduceOptions o = Options(c, Wire{codec, Rounding::kNearest}, 9);
          o.block = block;
          o.scale = ScaleFormat::kBF16;
          o.rotation = Rotation::kNone;
          ExpectWithinBound(in, Reduce(in, o, false), o,
                            Name(o) + " bf16 scale B" + std::to_string(block) + " n=" + std::to_string(n));
          AllReduceOptions f32 = o;
          f32.scale = ScaleFormat::kF32;
          EXPECT_LT(Communicator::WireBytesPerRank(count, DType::kBFloat16, n, o),
                    Communicator::WireBytesPerRank(count, DType::kBFloat16, n, f32));
        }
}

// Two-level scales (the integer codecs): every algorithm within its bound, rotated or not, ranks
// identical; the wire is the bf16 wire plus half a byte per 8 elements; a rotation works on
// blocks of 16 (two sub-blocks), and on Gaussian data the error falls below the bf16 scale's.
TEST(Formats, TwoLevelScalesWithinBoundAndIdenticalOnEveryRank) {
  for (Codec codec : {Codec::kInt8, Codec::kInt6, Codec::kInt5, Codec::kInt4})
    for (const Config& c : kConfigs)
      for (int n : {2, 3, 5})
        for (size_t block : {16, 128})
          for (Rotation rot : {Rotation::kNone, Rotation::kHadamard}) {
            const size_t count = 3001;
            auto in = MakeInputs(n, count, n == 3 ? DType::kFloat32 : DType::kBFloat16, 5 + n + block);
            AllReduceOptions o = Options(c, Wire{codec, Rounding::kNearest}, 9);
            o.block = block;
            o.scale = ScaleFormat::kTwoLevel;
            o.rotation = rot;
            ExpectWithinBound(in, Reduce(in, o, n == 5), o,
                              Name(o) + " two-level B" + std::to_string(block) + " n=" +
                                  std::to_string(n) + (rot == Rotation::kHadamard ? " hadamard" : ""));
            AllReduceOptions one = o;
            one.scale = ScaleFormat::kBF16;
            EXPECT_GT(Communicator::WireBytesPerRank(count, DType::kBFloat16, n, o),
                      Communicator::WireBytesPerRank(count, DType::kBFloat16, n, one));
          }
  auto in = MakeInputs(4, 1 << 16, DType::kFloat32, 77);
  const auto exact = ExactSum(in);
  for (Codec codec : {Codec::kInt8, Codec::kInt4}) {
    AllReduceOptions o = Options({Algorithm::kTwoShot, Phases::kRSAG}, {codec, Rounding::kNearest});
    o.block = 128;
    o.rotation = Rotation::kHadamard;
    o.scale = ScaleFormat::kBF16;
    const double one = MseAgainstRounded(Reduce(in, o, false)[0], exact);
    o.scale = ScaleFormat::kTwoLevel;
    const double two = MseAgainstRounded(Reduce(in, o, false)[0], exact);
    EXPECT_LT(two, 0.85 * one) << CodecName(codec);
  }
}

// Fewer bits, more error: int4 > e5m2 > e4m3 > int8 on N(0,1), and the wire shrinks for int4.
TEST(Formats, ErrorAndBytesOrderedByCodec) {
  auto in = MakeInputs(4, 1 << 16, DType::kFloat32, 12);
  const auto exact = ExactSum(in);
  auto mse = [&](Codec codec) {
    AllReduceOptions o = Options({Algorithm::kFull, Phases::kRSAG}, {codec, Rounding::kNearest});
    return MseAgainstRounded(Reduce(in, o, false)[0], exact);
  };
  const double i8 = mse(Codec::kInt8), i4 = mse(Codec::kInt4), e4 = mse(Codec::kFp8E4M3), e5 = mse(Codec::kFp8E5M2);
  EXPECT_LT(i8, e4);
  EXPECT_LT(e4, e5);
  EXPECT_LT(e5, i4);
  EXPECT_GT(i4 / i8, 100.0);  // 4 bits fewer: about (127/7)^2 = 329x the MSE
  AllReduceOptions o8, o4;
  o8.block = o4.block = 128;
  o8.scale = o4.scale = ScaleFormat::kF32;
  o4.codec = Codec::kInt4;
  const double b8 = double(Communicator::WireBytesPerRank(1 << 20, DType::kBFloat16, 4, o8));
  const double b4 = double(Communicator::WireBytesPerRank(1 << 20, DType::kBFloat16, 4, o4));
  EXPECT_NEAR(b8 / b4, (1 + 4.0 / 128) / (0.5 + 4.0 / 128), 0.01);
}

TEST(Formats, NanAndInfLandWhereTheIeeeSumHasThem) {
  const size_t count = 700;
  for (const Wire& w : Wires()) {
    auto in = MakeInputs(3, count, DType::kBFloat16, 9);
    in[0].Set(10, NAN);
    in[2].Set(100, INFINITY);
    in[1].Set(300, -INFINITY);
    in[0].Set(300, INFINITY);
    auto finite = in;
    for (Buffer& b : finite)
      for (size_t i = 0; i < count; ++i)
        if (!std::isfinite(b.Get(i))) b.Set(i, 0.0);
    for (const Config& c : kConfigs) {
      const AllReduceOptions o = Options(c, w);
      auto out = Reduce(in, o, false);
      const auto exact = ExactSum(in);
      const auto bound = ErrorBound(finite, o, DType::kBFloat16);
      for (size_t r = 1; r < out.size(); ++r) ASSERT_TRUE(out[r] == out[0]) << Name(o);
      for (size_t i = 0; i < count; ++i) {
        const double got = out[0].Get(i);
        if (std::isnan(exact[i])) ASSERT_TRUE(std::isnan(got)) << Name(o) << " element " << i;
        else if (std::isinf(exact[i])) ASSERT_EQ(got, exact[i]) << Name(o) << " element " << i;
        else ASSERT_LE(std::fabs(got - exact[i]), bound[i] * FlaggedBlockFactor(o.codec)) << Name(o) << " element " << i;
      }
    }
  }
}

TEST(Formats, SameBitsOnEverySimdTarget) {
  auto in = MakeInputs(5, 33333, DType::kBFloat16, 8);
  in[2].Set(500, INFINITY);
  for (const Wire& w : Wires())
    for (const Config& c : {Config{Algorithm::kFull, Phases::kRSAG}, Config{Algorithm::kTwoShot, Phases::kRSAG}}) {
      const AllReduceOptions o = Options(c, w, 77);
      ExpectSameBitsOnEverySimdTarget([&] { return Reduce(in, o, false); }, Name(o));
    }
}

// ---- Stochastic rounding ----------------------------------------------------------------------

TEST(Stochastic, SameSeedSameBitsOtherSeedOtherBits) {
  auto in = MakeInputs(4, 20000, DType::kBFloat16, 4);
  for (Codec codec : {Codec::kInt8, Codec::kInt6, Codec::kInt5, Codec::kInt4})
    for (const Config& c : kConfigs) {
      const Wire w{codec, Rounding::kStochastic};
      auto a = Reduce(in, Options(c, w, 123), false);
      auto b = Reduce(in, Options(c, w, 123), true);
      auto d = Reduce(in, Options(c, w, 124), false);
      EXPECT_TRUE(a[0] == b[0]) << Name(Options(c, w));
      EXPECT_FALSE(a[0] == d[0]) << Name(Options(c, w));
    }
}

// Over many seeds the mean result converges to the exact sum: its error shrinks like
// 1/sqrt(seeds). Nearest rounding is deterministic, so its error does not average out.
TEST(Stochastic, MeanOverSeedsConvergesToTheExactSum) {
  const size_t count = 4096;
  const int seeds = 256;
  for (Codec codec : {Codec::kInt8, Codec::kInt5, Codec::kInt4})
    for (const Config& c : {Config{Algorithm::kFull, Phases::kRSAG}, Config{Algorithm::kTwoShot, Phases::kRSAG}}) {
      auto in = MakeInputs(3, count, DType::kFloat32, 31);
      const auto exact = ExactSum(in);
      std::vector<double> mean(count, 0.0);
      double single_sq = 0;
      for (int s = 0; s < seeds; ++s) {
        auto out = Reduce(in, Options(c, {codec, Rounding::kStochastic}, uint64_t(s) * 7919), false);
        for (size_t i = 0; i < count; ++i) {
          const double e = out[0].Get(i) - exact[i];
          mean[i] += e / seeds;
          if (s == 0) single_sq += e * e;
        }
      }
      double mean_sq = 0;
      for (double m : mean) mean_sq += m * m;
      const double single_rms = std::sqrt(single_sq / count), mean_rms = std::sqrt(mean_sq / count);
      auto rne = Reduce(in, Options(c, {codec, Rounding::kNearest}), false);
      double rne_sq = 0;
      for (size_t i = 0; i < count; ++i) rne_sq += std::pow(rne[0].Get(i) - exact[i], 2);
      const double rne_rms = std::sqrt(rne_sq / count);
      const std::string what = Name(Options(c, {codec, Rounding::kStochastic}));
      // Expected mean_rms = single_rms / 16 for independent seeds; allow 1.5x.
      EXPECT_LT(mean_rms, 1.5 * single_rms / std::sqrt(double(seeds))) << what;
      EXPECT_LT(mean_rms, rne_rms / 5) << what;
    }
}

// ---- Telemetry -------------------------------------------------------------------------------

TEST(Telemetry, CountsTheEncodedValues) {
  const size_t count = 10007;
  for (int n : {2, 3, 5}) {
    auto in = MakeInputs(n, count, DType::kFloat32, 2);
    for (const Config& c : kConfigs) {
      std::vector<AllReduceStats> st;
      const AllReduceOptions o = Options(c, {Codec::kInt8, Rounding::kNearest});
      Reduce(in, o, false, nullptr, &st);
      // rs+ag: every rank encodes each shard but its own once in the RS (the rings along the
      // chain, two-shot its own contribution) and its own shard once for the AG: `count`
      // values. rs: all but its own shard; ag: its own shard only.
      uint64_t total = 0;
      for (int r = 0; r < n; ++r) {
        total += st[size_t(r)].encoded_values;
        // Absmax scales clip nothing real: at most a block's largest element, by an f32 ulp.
        EXPECT_LE(st[size_t(r)].clipped, st[size_t(r)].encoded_values / 64 + 2 * size_t(n)) << Name(o);
        if (c.phases == Phases::kRSAG) {
          EXPECT_EQ(st[size_t(r)].encoded_values, count) << Name(o);
        }
        if (c.phases != Phases::kAG) {  // every rank encodes something
          EXPECT_GT(st[size_t(r)].rms_err_est, 0.0) << Name(o);
          EXPECT_GT(st[size_t(r)].max_abs_err_est, st[size_t(r)].rms_err_est) << Name(o);
        }
      }
      if (c.phases == Phases::kRS) {
        EXPECT_EQ(total, uint64_t(n - 1) * count) << Name(o);
      } else if (c.phases == Phases::kAG) {
        EXPECT_EQ(total, count) << Name(o);
      }
    }
  }
  // The unquantized ring encodes nothing that counts.
  auto in = MakeInputs(3, 1000, DType::kFloat32, 2);
  std::vector<AllReduceStats> st;
  AllReduceOptions ring;
  ring.algorithm = Algorithm::kRing;
  Reduce(in, ring, false, nullptr, &st);
  for (const AllReduceStats& s : st) EXPECT_EQ(s.encoded_values, 0u);
}

// The estimate against the truth: with error feedback on, a rank's new residual holds exactly
// what its encodes lost. Two-shot on f32: each value is encoded once per rank.
TEST(Telemetry, EstimateMatchesTheRealLoss) {
  const size_t count = 1 << 16;
  for (const Wire& w : {Wire{Codec::kInt8, Rounding::kNearest}, Wire{Codec::kInt6, Rounding::kNearest},
                        Wire{Codec::kInt5, Rounding::kNearest}, Wire{Codec::kInt4, Rounding::kNearest},
                        Wire{Codec::kInt8, Rounding::kStochastic}, Wire{Codec::kFp8E4M3, Rounding::kNearest}})
    for (Phases ph : {Phases::kRS, Phases::kRSAG})
      for (Rotation rot : {Rotation::kNone, Rotation::kHadamard}) {
      auto in = MakeInputs(4, count, DType::kFloat32, 6);
      std::vector<std::vector<float>> res(4, std::vector<float>(count, 0.0f));
      std::vector<AllReduceStats> st;
      AllReduceOptions o = Options({Algorithm::kTwoShot, ph}, w);
      o.rotation = rot;
      Reduce(in, o, false, &res, &st);
      for (size_t r = 0; r < 4; ++r) {
        double sq = 0, max_abs = 0;
        for (float e : res[r]) {
          sq += double(e) * e;
          max_abs = std::max(max_abs, std::fabs(double(e)));
        }
        const double real_rms = std::sqrt(sq / double(st[r].encoded_values));
        // fp8's model assumes every value in the top binade: an upper estimate there.
        if (w.codec == Codec::kFp8E4M3) {
          EXPECT_LT(real_rms, st[r].rms_err_est) << Name(o);
          EXPECT_GT(real_rms, st[r].rms_err_est / 8) << Name(o);
        } else {
          EXPECT_NEAR(real_rms / st[r].rms_err_est, 1.0, 0.1) << Name(o) << " rank " << r;
        }
        // The estimates describe the encodes, which run in the rotated domain; the residual is
        // in the caller's. Block 64 = 2^6: the rotation is orthogonal, so the RMS carries over
        // (checked above for both), the largest single error does not (checked unrotated).
        if (rot == Rotation::kNone) {
          EXPECT_LE(max_abs, st[r].max_abs_err_est * (1 + 1e-4)) << Name(o);
        }
        // N(0,1) contributions to 3/4 of the values; rs+ag also encodes the own quarter's
        // sum of 4, variance 4: RMS sqrt(3/4 + 4/4).
        EXPECT_NEAR(st[r].encoded_rms, ph == Phases::kRS ? 1.0 : std::sqrt(1.75), 0.05) << Name(o);
        EXPECT_NEAR(st[r].rel_rms_err_est, st[r].rms_err_est / st[r].encoded_rms, 1e-12);
      }
    }
}

// ---- Error feedback ----------------------------------------------------------------------------

// Sum over ranks of (new residual) + result == sum over ranks of (input + old residual), up to
// the f32 rounding of the additions along the way: what quantization loses is kept, not lost.
TEST(ErrorFeedback, ResidualsConserveTheSum) {
  for (const Wire& w : {Wire{Codec::kInt8, Rounding::kNearest}, Wire{Codec::kInt4, Rounding::kNearest},
                        Wire{Codec::kFp8E5M2, Rounding::kNearest}, Wire{Codec::kInt4, Rounding::kStochastic}})
    for (Config c : {Config{Algorithm::kFull, Phases::kRSAG}, Config{Algorithm::kFullBidir, Phases::kAG},
                     Config{Algorithm::kSemi, Phases::kRSAG}, Config{Algorithm::kTwoShot, Phases::kRSAG},
                     Config{Algorithm::kTwoShot, Phases::kRS}, Config{Algorithm::kRing, Phases::kRSAG}})
      for (int n : {1, 2, 3, 5})
        for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
          const size_t count = 5003;
          auto in = MakeInputs(n, count, dt, 19 + n);
          std::vector<std::vector<float>> res(size_t(n), std::vector<float>(count, 0.0f));
          for (int r = 0; r < n; ++r)  // a non-zero starting residual
            for (size_t i = 0; i < count; ++i) res[size_t(r)][i] = float(0.01 * std::sin(double(i * 7 + r)));
          std::vector<double> before = ExactSum(in), mag(count, 0.0);
          for (int r = 0; r < n; ++r)
            for (size_t i = 0; i < count; ++i) {
              before[i] += res[size_t(r)][i];
              mag[i] += std::fabs(in[size_t(r)].Get(i)) + std::fabs(res[size_t(r)][i]);
            }
          AllReduceOptions o = Options(c, w, 3);
          o.rotation = Rotation::kNone;  // rotated: Rotation.ErrorFeedbackResidualsConserve...
          auto out = Reduce(in, o, n == 3, &res);
          const std::string what = Name(o) + " " + std::string(DTypeName(dt)) + " n=" + std::to_string(n);
          for (size_t r = 1; r < out.size(); ++r) ASSERT_TRUE(out[r] == out[0]) << what;
          // The documented conservation bound, unrotated: about 4N f32 roundings of values up
          // to `mag`, each 2^-24 relative, doubled.
          std::vector<double> conserve(count);
          tools::ConservationBound(mag, n, 0, conserve.data());
          for (size_t i = 0; i < count; ++i) {
            double after = out[0].Get(i);
            for (int r = 0; r < n; ++r) after += res[size_t(r)][i];
            ASSERT_LE(std::fabs(after - before[i]), conserve[i] + 1e-30) << what << " element " << i;
          }
          // The residuals really carry what quantization lost.
          if (IsQuantized(c.algo) && n > 1) {
            double res_sq = 0;
            for (const auto& v : res)
              for (float e : v) res_sq += double(e) * e;
            EXPECT_GT(res_sq, 0.0) << what;
          }
        }
}

// Repeating a call with the same input, the mean of the results converges to the exact sum
// like 1/K: the error of the mean is what is left in the residuals, divided by K.
TEST(ErrorFeedback, MeanOfRepeatedCallsConvergesToTheExactSum) {
  const size_t count = 8192;
  const int calls = 64;
  for (Codec codec : {Codec::kInt4, Codec::kInt8})
    for (Config c : {Config{Algorithm::kFull, Phases::kRSAG}, Config{Algorithm::kTwoShot, Phases::kRSAG}}) {
      auto in = MakeInputs(4, count, DType::kFloat32, 8);
      const auto exact = ExactSum(in);
      std::vector<std::vector<float>> res(4, std::vector<float>(count, 0.0f));
      std::vector<double> mean(count, 0.0);
      double first_sq = 0;
      const AllReduceOptions o = Options(c, {codec, Rounding::kNearest});
      for (int k = 0; k < calls; ++k) {
        auto out = Reduce(in, o, false, &res);
        for (size_t i = 0; i < count; ++i) {
          mean[i] += out[0].Get(i) / calls;
          if (k == 0) first_sq += std::pow(out[0].Get(i) - exact[i], 2);
        }
      }
      double mean_sq = 0;
      for (size_t i = 0; i < count; ++i) mean_sq += std::pow(mean[i] - exact[i], 2);
      // Without feedback the mean would keep the single call's error (nearest rounding is
      // deterministic); with it, the error of the mean is ~ the residuals' size / K.
      EXPECT_LT(std::sqrt(mean_sq), std::sqrt(first_sq) * 8.0 / calls) << Name(o);
    }
}

TEST(ErrorFeedback, InvalidUseIsReportedOnEveryRank) {
  auto in = MakeInputs(3, 1000, DType::kFloat32, 1);
  auto out = in;
  std::vector<std::vector<float>> res(3, std::vector<float>(1000, 0.0f));
  auto run = [&](const AllReduceOptions& o, bool overlap) {
    return RunRanks(3, [&](Communicator& c) {
      const size_t r = size_t(c.rank());
      AllReduceExtras x;
      x.residual = overlap && r == 1 ? static_cast<float*>(out[r].data()) : res[r].data();
      return c.AllReduce(in[r].data(), out[r].data(), 1000, DType::kFloat32, o, x);
    });
  };
  AllReduceOptions naive;
  naive.algorithm = Algorithm::kNaiveFp8;
  for (const Status& s : run(naive, false)) EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  for (const Status& s : run(AllReduceOptions{}, true)) EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  AllReduceOptions wire_only;
  wire_only.mode = ExecutionMode::kWireOnly;
  for (const Status& s : run(wire_only, false)) EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST(Stochastic, InvalidUseIsReportedOnEveryRank) {
  auto in = MakeInputs(3, 1000, DType::kFloat32, 1);
  auto out = in;
  auto run = [&](const std::function<void(int, AllReduceOptions*)>& set) {
    return RunRanks(3, [&](Communicator& c) {
      const size_t r = size_t(c.rank());
      AllReduceOptions o;
      o.timeout_ms = 20000;
      set(c.rank(), &o);
      return c.AllReduce(in[r].data(), out[r].data(), 1000, DType::kFloat32, o);
    });
  };
  // Stochastic rounding with an fp8 codec, on one rank only.
  for (const Status& s : run([](int r, AllReduceOptions* o) {
         if (r == 2) o->codec = Codec::kFp8E4M3, o->rounding = Rounding::kStochastic;
       })) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("stochastic rounding needs an integer codec (int8, int6, int5, int4), not fp8_e4m3"), std::string::npos) << s.ToString();
  }
  // Seeds or codecs that differ between ranks.
  for (const Status& s : run([](int r, AllReduceOptions* o) { o->seed = uint64_t(r == 1); }))
    EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.ToString();
  for (const Status& s : run([](int r, AllReduceOptions* o) { if (r == 0) o->codec = Codec::kInt4; }))
    EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.ToString();
  for (const Status& s : run([](int, AllReduceOptions* o) { o->codec = Codec(9); }))
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  for (const Status& s : run([](int, AllReduceOptions* o) { o->rounding = Rounding(5); }))
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

}  // namespace
}  // namespace equarx::testing
