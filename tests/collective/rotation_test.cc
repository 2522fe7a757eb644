// The AllReduce with rotation = hadamard (randomized Walsh-Hadamard before the first encode,
// inverted after the last decode), against f64 oracles:
//   - every algorithm (auto included) x codec x dtype, rank counts, sizes with tails, in place:
//     ranks bitwise identical and every element within the rotated error bound
//     (support/oracle.cc, RotatedBound);
//   - the unquantized ring with a rotation matches it without, up to f32 rounding;
//   - a quantized call with a rotation is bitwise the unrotated call on rotated inputs;
//   - on data with outlier channels the rotation lowers the error (its purpose);
//   - non-finite or huge inputs on any rank: the call runs unrotated on every rank (bitwise the
//     rotation=none result), NaN/Inf where the IEEE sum has them, whether the ranks check their
//     inputs first (in place), rotate guarded and repeat (out of place), or are mixed; safe
//     inputs are rotated either way, and a repeated call keeps the group's calls in step;
//   - stochastic rounding, telemetry and error feedback (residuals in the caller's domain
//     conserve the sum) with a rotation; the same bits on every SIMD target;
//   - bad combinations and mismatched rotations refused on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "codec/codec.h"
#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

std::vector<Buffer> Reduce(const std::vector<Buffer>& in, const AllReduceOptions& o, bool in_place,
                           std::vector<std::vector<float>>* residuals = nullptr,
                           std::vector<AllReduceStats>* stats = nullptr, int ranks_per_host = 0) {
  return ReduceAll(in, o, in_place, residuals, stats, ranks_per_host);
}

std::string Name(const AllReduceOptions& o, int n, size_t count, DType dt) {
  return FormatNonDefaultOptions(o) + " n=" + std::to_string(n) + " count=" + std::to_string(count) +
         " " + std::string(DTypeName(dt));
}

// Inputs with a few outlier channels (as in a transformer's residual stream).
std::vector<Buffer> WithOutliers(int ranks, size_t count, DType dt, uint64_t seed) {
  auto in = MakeInputs(ranks, count, dt, seed);
  for (Buffer& b : in)
    for (size_t i = 0; i < count; ++i)
      if (i % 97 == 13) b.Set(i, b.Get(i) * 60.0);
  return in;
}

AllReduceOptions Rotated(Algorithm a, Phases p, Codec c) {
  AllReduceOptions o;
  o.algorithm = a;
  o.phases = p;
  o.codec = c;
  o.rotation = Rotation::kHadamard;
  o.seed = 11;
  return o;
}

TEST(Rotation, EveryAlgorithmWithinBoundAndIdenticalOnEveryRank) {
  const Algorithm algos[] = {Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi,
                             Algorithm::kTwoShot, Algorithm::kAuto, Algorithm::kRing,
                             Algorithm::kOneShot, Algorithm::kOneShotRaw, Algorithm::kRecursiveDoubling};
  for (Algorithm a : algos)
    for (Phases p : {Phases::kRSAG, Phases::kRS, Phases::kAG})
      for (int n : {2, 3, 5, 8})
        for (size_t count : {size_t(1), size_t(63), size_t(64), size_t(65), size_t(n) * 64 - 1,
                             size_t(5003)}) {
          const bool unquantized =
              a == Algorithm::kRing || a == Algorithm::kOneShotRaw || a == Algorithm::kRecursiveDoubling;
          if ((unquantized || a == Algorithm::kAuto) && p != Phases::kRSAG) continue;
          DType dt = count % 3 == 0 ? DType::kFloat16 : count % 2 ? DType::kBFloat16 : DType::kFloat32;
          // f16 rotates only where every hop is quantized (Rotation.F16WithAnUnquantizedHop).
          if (dt == DType::kFloat16 && (unquantized || p != Phases::kRSAG)) dt = DType::kBFloat16;
          auto in = WithOutliers(n, count, dt, 7 + count * 3 + size_t(n));
          AllReduceOptions o = Rotated(a, p, Codec::kInt8);
          o.block = count % 2 ? 64 : 32;
          ExpectAgreeAndWithinBound(in, Reduce(in, o, count == 65), o, Name(o, n, count, dt));
        }
}

TEST(Rotation, EveryCodecAndBlockSize) {
  for (Codec c : {Codec::kInt8, Codec::kInt6, Codec::kInt5, Codec::kInt4, Codec::kFp8E4M3, Codec::kFp8E5M2})
    for (size_t block : {32, 48, 64, 100, 128, 256, 4096})
      for (Algorithm a : {Algorithm::kSemi, Algorithm::kTwoShot, Algorithm::kOneShot}) {
        const size_t count = 3 * block + 17;
        auto in = WithOutliers(4, count, DType::kBFloat16, block + size_t(c));
        AllReduceOptions o = Rotated(a, Phases::kRSAG, c);
        o.block = block;
        o.microshards = 3;
        ExpectAgreeAndWithinBound(in, Reduce(in, o, false), o, Name(o, 4, count, DType::kBFloat16));
      }
}

TEST(Rotation, UnquantizedRingMatchesItWithoutUpToF32Rounding) {
  for (int n : {2, 3, 7}) {
    const size_t count = 10007;
    auto in = MakeInputs(n, count, DType::kFloat32, 99);
    AllReduceOptions plain;
    plain.algorithm = Algorithm::kRing;
    plain.rotation = Rotation::kNone;
    AllReduceOptions rot = plain;
    rot.rotation = Rotation::kHadamard;
    const auto a = Reduce(in, plain, false), b = Reduce(in, rot, false);
    ExpectAgreeAndWithinBound(in, b, rot, "ring rotated n=" + std::to_string(n));
    // Both within their documented bounds of the exact sum (docs/algorithms.md, "Error bound"),
    // so within the sum of the two of each other.
    const auto ba = ErrorBound(in, plain, DType::kFloat32), bb = ErrorBound(in, rot, DType::kFloat32);
    double worst = 0;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_LE(std::fabs(a[0].Get(i) - b[0].Get(i)), ba[i] + bb[i]) << "element " << i;
      worst = std::max(worst, std::fabs(a[0].Get(i) - b[0].Get(i)));
    }
    EXPECT_GT(worst, 0.0) << "a rotation that does nothing would not be tested";
  }
}

// The ring cuts its shards on rotation blocks when asked to rotate, whatever the block.
TEST(Rotation, UnquantizedRingWithBlocksThatDoNotDivideItsAlignment) {
  for (size_t block : {48, 100, 256})
    for (int n : {2, 3, 5}) {
      const size_t count = 7 * block + 13;
      auto in = MakeInputs(n, count, DType::kFloat32, block + size_t(n));
      AllReduceOptions o;
      o.algorithm = Algorithm::kRing;
      o.rotation = Rotation::kHadamard;
      o.block = block;
      o.scale = ScaleFormat::kF32;  // the rotation block is the block (two-level scales: 16)
      const auto out = Reduce(in, o, false);
      ExpectAgreeAndWithinBound(in, out, o, "ring hadamard block " + std::to_string(block) + " n=" + std::to_string(n));
      if (n != 2) continue;
      // Two ranks sum in f32 whatever the shards: the result must be exactly the definition,
      // inverse(rotate(x0) + rotate(x1)) with rotation blocks anchored at element 0.
      const codec::RotationSpec spec{uint32_t(block), o.seed};
      std::vector<float> y0(count), y1(count), want(count);
      codec::ref::RotateForward(spec, DType::kFloat32, in[0].data(), count, 0, y0.data());
      codec::ref::RotateForward(spec, DType::kFloat32, in[1].data(), count, 0, y1.data());
      for (size_t i = 0; i < count; ++i) y0[i] += y1[i];
      codec::ref::RotateInverse(spec, y0.data(), count, 0, DType::kFloat32, want.data());
      ASSERT_EQ(0, std::memcmp(want.data(), out[0].data(), count * 4)) << "block " << block;
    }
}

// The rotation is applied on the way in and out, tile by tile inside each microshard and codec
// part (CallIo::RotatedTiles, DecodeOut), and the schedule in between is the unrotated one. So
// a rotated call on f32 inputs is bitwise the unrotated call on the reference-rotated inputs,
// inverse-rotated by the reference: checked with segments of several tiles and parts
// (one microshard, threads 1 and 2), for the quantized schedules and codecs.
TEST(Rotation, RotatedCallIsTheUnrotatedCallOnRotatedInputs) {
  for (Algorithm a : {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kSemi, Algorithm::kFull})
    for (Codec c : {Codec::kInt8, Codec::kInt4, Codec::kFp8E4M3})
      for (uint32_t threads : {1u, 2u}) {
        const int n = 3;
        const size_t count = size_t(n) * 2 * 40000 + 77;  // shards of 80000: 2 parts, 10 tiles
        auto in = WithOutliers(n, count, DType::kFloat32, 5 + size_t(a) * 7 + size_t(c));
        AllReduceOptions rot = Rotated(a, Phases::kRSAG, c);
        rot.microshards = 1;
        rot.threads = threads;
        AllReduceOptions plain = rot;
        plain.rotation = Rotation::kNone;
        const codec::RotationSpec spec{uint32_t(RotationBlockOf(rot)), rot.seed};
        std::vector<Buffer> rotated;
        for (const Buffer& b : in) {
          rotated.emplace_back(DType::kFloat32, count);
          codec::ref::RotateForward(spec, DType::kFloat32, b.data(), count, 0,
                                    static_cast<float*>(rotated.back().data()));
        }
        const auto got = Reduce(in, rot, false), base = Reduce(rotated, plain, false);
        const std::string what = Name(rot, n, count, DType::kFloat32);
        std::vector<float> want(count);
        for (int r = 0; r < n; ++r) {
          codec::ref::RotateInverse(spec, static_cast<const float*>(base[size_t(r)].data()), count, 0,
                                    DType::kFloat32, want.data());
          ASSERT_EQ(0, std::memcmp(want.data(), got[size_t(r)].data(), count * 4)) << what << " rank " << r;
        }
      }
}

TEST(Rotation, LowersTheErrorOnOutlierData) {
  for (Algorithm a : {Algorithm::kFullBidir, Algorithm::kSemi, Algorithm::kTwoShot}) {
    auto in = WithOutliers(4, 1 << 15, DType::kFloat32, 5);
    const auto exact = ExactSum(in);
    AllReduceOptions o = Rotated(a, Phases::kRSAG, Codec::kInt8);
    AllReduceOptions none = o;
    none.rotation = Rotation::kNone;
    const double mse_rot = MseAgainstRounded(Reduce(in, o, false)[0], exact);
    const double mse_none = MseAgainstRounded(Reduce(in, none, false)[0], exact);
    EXPECT_LT(mse_rot, 0.5 * mse_none) << AlgorithmName(a) << " rotated " << mse_rot << " none " << mse_none;
  }
}

TEST(Rotation, NonFiniteOrHugeInputsRunUnrotatedOnEveryRank) {
  // Out of place every rank rotates guarded and repeats the call unrotated when a result comes
  // out NaN/Inf; in place every rank checks its input first; mixed, the out-of-place ranks
  // check theirs after the first exchange and the ranks agree again. All three must give
  // bitwise the rotation = none result on every rank.
  const std::vector<std::vector<bool>> layouts = {
      {false, false, false}, {true, true, true}, {true, false, false}, {false, false, true}};
  for (Algorithm a : {Algorithm::kFull, Algorithm::kSemi, Algorithm::kTwoShot, Algorithm::kOneShot})
    for (double bad : {double(NAN), double(INFINITY), 0x1p110})
      for (DType dt : {DType::kFloat32, DType::kBFloat16})
        for (const auto& in_place : layouts) {
          const size_t count = 777;
          auto in = MakeInputs(3, count, dt, 4);
          in[2].Set(300, bad);  // one rank only
          AllReduceOptions o = Rotated(a, Phases::kRSAG, Codec::kInt8);
          AllReduceOptions none = o;
          none.rotation = Rotation::kNone;
          const auto got = ReduceAll(in, o, in_place), want = Reduce(in, none, false);
          const std::string what = std::string(AlgorithmName(a)) + " bad=" + std::to_string(bad) +
                                   " in place " + std::to_string(in_place[0]) +
                                   std::to_string(in_place[1]) + std::to_string(in_place[2]);
          for (size_t r = 0; r < got.size(); ++r) ASSERT_TRUE(got[r] == want[0]) << what << " rank " << r;
          if (!std::isfinite(bad)) {
            EXPECT_TRUE(std::isnan(got[0].Get(300)) == std::isnan(bad)) << what;
            EXPECT_TRUE(std::isfinite(got[0].Get(299)) && std::isfinite(got[0].Get(301))) << what;
          }
        }
}

TEST(Rotation, SafeInputsRotateWhetherCheckedFirstOrGuarded) {
  // Finite inputs: the guarded call (every rank out of place) is not repeated, so it gives the
  // rotated result, bitwise that of the calls whose ranks check their inputs first (in place,
  // or mixed), and not the unrotated one. Then a call with a NaN on the same group, repeated
  // unrotated, and a clean call after it: the repeat keeps every rank's calls in step. On one
  // host (the call check's exchange settles the rotation) and a rank per host (its tree does).
  for (int ranks_per_host : {0, 1})
  for (Algorithm a : {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kAuto, Algorithm::kOneShot}) {
    // auto quantizes from somewhat larger calls (the smallest run unquantized schedules).
    const size_t count = a == Algorithm::kAuto ? 12000 : 1500;
    auto in = MakeInputs(4, count, DType::kBFloat16, 9);
    AllReduceOptions o = Rotated(a, Phases::kRSAG, Codec::kInt8);
    AllReduceOptions none = o;
    none.rotation = Rotation::kNone;
    auto reduce = [&](const std::vector<bool>& in_place) {
      return ReduceAll(in, o, in_place, nullptr, nullptr, ranks_per_host);
    };
    const auto guarded = reduce({false, false, false, false});
    const auto checked = reduce({true, true, true, true});
    const auto mixed = reduce({false, true, false, false});
    const auto unrotated = Reduce(in, none, false, nullptr, nullptr, ranks_per_host);
    const std::string what = std::string(AlgorithmName(a)) + (ranks_per_host ? " a rank per host" : " one host");
    for (size_t r = 0; r < in.size(); ++r) {
      ASSERT_TRUE(guarded[r] == checked[0]) << what << " rank " << r;
      ASSERT_TRUE(mixed[r] == checked[0]) << what << " rank " << r;
    }
    EXPECT_FALSE(guarded[0] == unrotated[0]) << what;

    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(CreateInProcessGroupOnHosts(4, ranks_per_host ? ranks_per_host : 4, &comms).ok());
    auto bad = in;
    bad[1].Set(700, NAN);
    const auto want_bad = Reduce(bad, none, false, nullptr, nullptr, ranks_per_host);
    for (const auto* inputs : {&in, &bad, &in}) {
      std::vector<Buffer> out = *inputs;
      auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
        const size_t r = size_t(c.rank());
        return c.AllReduce((*inputs)[r].data(), out[r].data(), count, DType::kBFloat16, o);
      });
      for (size_t r = 0; r < st.size(); ++r) ASSERT_TRUE(st[r].ok()) << what << " " << st[r].ToString();
      const Buffer& want = inputs == &bad ? want_bad[0] : checked[0];
      for (size_t r = 0; r < out.size(); ++r) ASSERT_TRUE(out[r] == want) << what << " rank " << r;
    }
  }
}

TEST(Rotation, WithoutValidationANonFiniteValueStaysInItsBlock) {
  // validate = false skips the exchange that lets ranks fall back: the NaN then reaches its
  // whole rotation block (documented), but nothing else, and ranks still agree.
  const size_t count = 640;
  auto in = MakeInputs(4, count, DType::kFloat32, 12);
  in[1].Set(70, NAN);
  AllReduceOptions o = Rotated(Algorithm::kSemi, Phases::kRSAG, Codec::kInt8);
  o.validate = false;
  const auto out = Reduce(in, o, false);
  for (size_t r = 1; r < out.size(); ++r) ASSERT_TRUE(out[r] == out[0]);
  for (size_t i = 0; i < count; ++i) {
    const bool in_block = i / 16 == 70 / 16;  // int8's default two-level scales rotate over 16
    EXPECT_EQ(std::isnan(out[0].Get(i)), in_block) << "element " << i;
  }
}

TEST(Rotation, StochasticRoundingAndTelemetry) {
  auto in = WithOutliers(5, 9001, DType::kBFloat16, 31);
  AllReduceOptions o = Rotated(Algorithm::kTwoShot, Phases::kRSAG, Codec::kInt8);
  o.rounding = Rounding::kStochastic;
  std::vector<AllReduceStats> stats;
  const auto a = Reduce(in, o, false, nullptr, &stats);
  ExpectAgreeAndWithinBound(in, a, o, "two_shot stochastic rotated");
  EXPECT_TRUE(Reduce(in, o, true) == a) << "same seed, same bits (in place too)";
  o.seed = 12;
  EXPECT_FALSE(Reduce(in, o, false) == a) << "another seed: other signs and other rounding";
  uint64_t encoded = 0;
  for (const auto& s : stats) encoded += s.encoded_values;
  // two_shot: every rank encodes its 4 foreign shards once and its own shard once.
  EXPECT_EQ(encoded, 5u * 9001u);
  EXPECT_GT(stats[0].rel_rms_err_est, 0.0);
}

// On one host, and 2 ranks also a rank per host (the call check's tree, in whose step
// recursive_doubling's rides and one_shot's data leaves).
TEST(Rotation, ErrorFeedbackResidualsConserveTheSumInTheCallersDomain) {
  for (Algorithm a : {Algorithm::kFull, Algorithm::kSemi, Algorithm::kTwoShot, Algorithm::kOneShot,
                      Algorithm::kRecursiveDoubling})
    for (DType dt : {DType::kFloat32, DType::kBFloat16})
      for (int n : {2, 3})
      for (int ranks_per_host : {0, 1}) {
        if (ranks_per_host && n != 2) continue;
        const size_t count = 3001;
        auto in = WithOutliers(n, count, dt, 17);
        std::vector<std::vector<float>> res(size_t(n), std::vector<float>(count, 0.0f));
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < count; ++i) res[size_t(r)][i] = float(0.01 * std::cos(double(i + r)));
        std::vector<double> before = ExactSum(in), mag(count, 0.0);
        std::vector<Buffer> staged;  // what each rank contributes: f32(send) + old residual
        for (int r = 0; r < n; ++r) {
          staged.emplace_back(DType::kFloat32, count);
          for (size_t i = 0; i < count; ++i) {
            before[i] += res[size_t(r)][i];
            mag[i] += std::fabs(in[size_t(r)].Get(i)) + std::fabs(res[size_t(r)][i]);
            staged.back().Set(i, float(in[size_t(r)].Get(i)) + res[size_t(r)][i]);
          }
        }
        AllReduceOptions o = Rotated(a, Phases::kRSAG, Codec::kInt4);
        const auto out = Reduce(in, o, n == 3, &res, nullptr, ranks_per_host);
        // The result itself is the rotated AllReduce of the staged contributions.
        const auto bound = ErrorBound(staged, o, dt);
        const auto exact_staged = ExactSum(staged);
        for (size_t i = 0; i < count; ++i)
          ASSERT_LE(std::fabs(out[0].Get(i) - exact_staged[i]), bound[i]) << "result element " << i;
        const std::string what = std::string(AlgorithmName(a)) + " " + std::string(DTypeName(dt)) +
                                 " n=" + std::to_string(n) + (ranks_per_host ? " a rank per host" : " one host");
        for (size_t r = 1; r < out.size(); ++r) ASSERT_TRUE(out[r] == out[0]) << what;
        // The documented conservation bound, rotated: the f32 roundings of the transforms
        // spread over each rotation block of 64 elements.
        std::vector<double> conserve(count);
        tools::ConservationBound(mag, n, RotationBlockOf(o), conserve.data());
        double res_sq = 0;
        for (size_t i = 0; i < count; ++i) {
          double after = out[0].Get(i);
          for (int r = 0; r < n; ++r) after += res[size_t(r)][i], res_sq += double(res[size_t(r)][i]) * res[size_t(r)][i];
          ASSERT_LE(std::fabs(after - before[i]), conserve[i]) << what << " element " << i;
        }
        // recursive_doubling loses only the final rounding to the dtype: nothing on f32 data.
        if (IsQuantized(a) || dt != DType::kFloat32) {
          EXPECT_GT(res_sq, 0.0) << what;
        }
      }
}

TEST(Rotation, SameBitsOnEverySimdTarget) {
  auto in = WithOutliers(4, 20011, DType::kBFloat16, 3);
  for (Algorithm a : {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kOneShot}) {
    AllReduceOptions o = Rotated(a, Phases::kRSAG, Codec::kInt8);
    codec::ForceTarget(0);
    const auto want = Reduce(in, o, false);
    for (int64_t target : codec::AvailableTargets()) {
      codec::ForceTarget(target);
      EXPECT_TRUE(Reduce(in, o, false) == want) << codec::TargetName(target);
    }
    codec::ForceTarget(0);
  }
}

// f16 on an unquantized hop: an explicit hadamard is refused on every rank (the rotated values
// could overflow f16 where the sum does not), the default quietly runs unrotated.
TEST(Rotation, F16WithAnUnquantizedHop) {
  auto in = MakeInputs(3, 1000, DType::kFloat16, 8);
  for (Algorithm a : {Algorithm::kRing, Algorithm::kSemi}) {
    AllReduceOptions o;
    o.algorithm = a;
    o.phases = Phases::kRS;
    o.rotation = Rotation::kHadamard;
    std::vector<Buffer> out = in;
    auto st = RunRanks(3, [&](Communicator& c) {
      const size_t r = size_t(c.rank());
      return c.AllReduce(in[r].data(), out[r].data(), 1000, DType::kFloat16, o);
    });
    for (const Status& s : st) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
      EXPECT_NE(s.message().find("f16"), std::string::npos) << s.ToString();
    }
    AllReduceOptions d = o, none = o;
    d.rotation = Rotation::kDefault;
    none.rotation = Rotation::kNone;
    EXPECT_TRUE(Reduce(in, d, false) == Reduce(in, none, false)) << AlgorithmName(a);
  }
  AllReduceOptions rsag;  // every hop quantized: f16 rotates
  rsag.rotation = Rotation::kHadamard;
  ExpectAgreeAndWithinBound(in, Reduce(in, rsag, false), rsag, "f16 rs+ag hadamard");
}

TEST(Rotation, BadCombinationsAndMismatchesFailOnEveryRank) {
  std::vector<float> buf(256, 1.0f), out(256);
  auto st = RunRanks(3, [&](Communicator& c) {
    AllReduceOptions o;
    o.algorithm = Algorithm::kNaiveFp8;
    o.rotation = Rotation::kHadamard;
    std::vector<float> mine(buf), res(256);
    return c.AllReduce(mine.data(), res.data(), 256, DType::kFloat32, o);
  });
  for (const Status& s : st) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("naive_fp8"), std::string::npos) << s.ToString();
  }
  st = RunRanks(3, [&](Communicator& c) {
    AllReduceOptions o;
    o.rotation = c.rank() == 2 ? Rotation::kNone : Rotation::kHadamard;
    std::vector<float> mine(buf), res(256);
    return c.AllReduce(mine.data(), res.data(), 256, DType::kFloat32, o);
  });
  for (const Status& s : st) {
    EXPECT_EQ(s.code(), StatusCode::kMismatch) << s.ToString();
    EXPECT_NE(s.message().find("rotation none (rank 0 has hadamard)"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace equarx::testing
