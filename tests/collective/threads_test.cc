// The codec on several threads (option `threads`): every kernel call of a large enough
// microshard is cut into parts on block boundaries and run on the communicator's worker pool.
// The results must be the same bits for every thread count — every algorithm (hierarchical
// included), codec, scale storage, dtype, rotation, stochastic rounding, error feedback
// (residuals too), in place — and the telemetry must count the same values.
#include <gtest/gtest.h>

#include <string>

#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

struct Config {
  Algorithm algorithm;
  Codec codec;
  ScaleFormat scale;
  Rotation rotation;
  DType dtype;
  Rounding rounding;
  bool error_feedback, in_place;
  int ranks;
};

// Large enough that a microshard holds several parts of 16384 elements at 2 and 3 threads.
constexpr size_t kCount = (size_t(1) << 18) + 4321;

TEST(Threads, SameBitsForEveryThreadCount) {
  const Config configs[] = {
      {Algorithm::kFullBidir, Codec::kInt8, ScaleFormat::kF32, Rotation::kNone, DType::kBFloat16, Rounding::kNearest, false, false, 2},
      {Algorithm::kFullBidir, Codec::kInt8, ScaleFormat::kF32, Rotation::kHadamard, DType::kFloat32, Rounding::kNearest, false, true, 3},
      {Algorithm::kTwoShot, Codec::kInt8, ScaleFormat::kTwoLevel, Rotation::kHadamard, DType::kBFloat16, Rounding::kNearest, false, false, 2},
      {Algorithm::kTwoShot, Codec::kInt4, ScaleFormat::kBF16, Rotation::kNone, DType::kFloat16, Rounding::kStochastic, false, false, 2},
      {Algorithm::kFullBidir, Codec::kInt6, ScaleFormat::kTwoLevel, Rotation::kHadamard, DType::kBFloat16, Rounding::kNearest, false, false, 2},
      {Algorithm::kOneShot, Codec::kInt5, ScaleFormat::kBF16, Rotation::kNone, DType::kFloat32, Rounding::kStochastic, false, false, 3},
      {Algorithm::kSemi, Codec::kFp8E4M3, ScaleFormat::kF32, Rotation::kNone, DType::kBFloat16, Rounding::kNearest, false, false, 2},
      {Algorithm::kFull, Codec::kInt8, ScaleFormat::kF32, Rotation::kHadamard, DType::kFloat32, Rounding::kNearest, true, false, 2},
      {Algorithm::kTwoShot, Codec::kInt8, ScaleFormat::kF32, Rotation::kNone, DType::kFloat32, Rounding::kStochastic, true, true, 2},
      {Algorithm::kRing, Codec::kInt8, ScaleFormat::kF32, Rotation::kNone, DType::kBFloat16, Rounding::kNearest, false, false, 2},
      {Algorithm::kHierarchical, Codec::kInt8, ScaleFormat::kF32, Rotation::kHadamard, DType::kBFloat16, Rounding::kNearest, false, false, 4},
  };
  for (const Config& c : configs) {
    AllReduceOptions o;
    o.algorithm = c.algorithm;
    o.codec = c.codec;
    o.scale = c.scale;
    o.block = c.codec == Codec::kInt4 ? 32 : 64;
    o.rotation = c.rotation;
    o.rounding = c.rounding;
    o.seed = 17;
    o.microshards = 2;
    if (c.algorithm == Algorithm::kHierarchical) {
      o.ranks_per_host = 2;
      o.inner = Algorithm::kTwoShot;
    }
    const auto in = MakeInputs(c.ranks, kCount, c.dtype, 91 + size_t(c.ranks));
    std::vector<Buffer> first;
    std::vector<std::vector<float>> first_res;
    std::vector<AllReduceStats> first_stats;
    for (uint32_t threads : {1u, 2u, 3u}) {
      o.threads = threads;
      const std::string what = FormatNonDefaultOptions(o) + " " + std::string(DTypeName(c.dtype)) +
                               (c.error_feedback ? " error feedback" : "") +
                               (c.in_place ? " in place" : "");
      SCOPED_TRACE(what);
      std::vector<std::vector<float>> res(size_t(c.ranks), std::vector<float>(kCount, 0.0f));
      for (size_t r = 0; r < res.size(); ++r)
        for (size_t i = 0; i < kCount; i += 7) res[r][i] = float(int(i % 13) - 6) * 1e-3f;
      std::vector<AllReduceStats> stats;
      const auto out = ReduceAll(in, o, c.in_place, c.error_feedback ? &res : nullptr, &stats);
      if (threads == 1) {
        ExpectAgreeAndWithinBound(in, out, o, what);
        first = out;
        first_res = res;
        first_stats = stats;
        continue;
      }
      for (int r = 0; r < c.ranks; ++r) {
        ASSERT_TRUE(out[size_t(r)] == first[size_t(r)]) << "rank " << r << " output";
        if (c.error_feedback) {
          ASSERT_EQ(res[size_t(r)], first_res[size_t(r)]) << "rank " << r << " residual";
        }
        EXPECT_EQ(stats[size_t(r)].encoded_values, first_stats[size_t(r)].encoded_values);
        EXPECT_EQ(stats[size_t(r)].clipped, first_stats[size_t(r)].clipped);
        if (c.algorithm != Algorithm::kRing) {
          EXPECT_GT(stats[size_t(r)].encoded_values, 0u);
        }
        EXPECT_NEAR(stats[size_t(r)].sum_sq_err_est, first_stats[size_t(r)].sum_sq_err_est,
                    1e-9 * first_stats[size_t(r)].sum_sq_err_est);
      }
    }
  }
}

TEST(Threads, OptionRangeAndText) {
  AllReduceOptions o;
  ASSERT_TRUE(ParseOptions("threads=4", &o).ok());
  EXPECT_EQ(o.threads, 4u);
  EXPECT_FALSE(ParseOptions("threads=65", &o).ok());
  EXPECT_EQ(o.threads, 4u);  // unchanged by a rejected text
  o.threads = 0;
  EXPECT_EQ(FormatNonDefaultOptions(o), "");
}

}  // namespace
}  // namespace equarx::testing
