// The scratch bound at its real floor, through the public API: 4 thread ranks all-reduce
// 256 MiB of f32 with every algorithm (and auto), each in a new group, and every rank's
// CommStats::scratch_bytes must stay within max(64 MiB, a quarter of the message) = 64 MiB,
// the ranks must agree bit for bit, and each result must be within the documented error bound
// of the f64 sum. Built in the release configuration only (tests/collective/CMakeLists.txt):
// 2 GiB of buffers are beyond what the sanitizer builds run in CI's time; scratch_test.cc
// runs the same code paths under them with a lowered floor.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "equarx/equarx.hpp"
#include "support/harness.h"
#include "support/oracle.h"

namespace equarx {
namespace {

constexpr size_t kCount = size_t(64) << 20;  // 256 MiB of f32
constexpr uint64_t kBound = uint64_t(64) << 20;

TEST(ScratchBound, EveryAlgorithmAt256MiBOn4Ranks) {
  const int n = 4;
  const auto in = testing::MakeInputs(n, kCount, DType::kFloat32, 2026);
  const std::vector<double> exact = testing::ExactSum(in);
  std::vector<AllReduceOptions> configs;
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kFull, Algorithm::kFullBidir,
                      Algorithm::kSemi, Algorithm::kNaiveFp8, Algorithm::kTwoShot, Algorithm::kOneShot,
                      Algorithm::kOneShotRaw, Algorithm::kRecursiveDoubling}) {
    AllReduceOptions o;
    o.algorithm = a;
    configs.push_back(o);
  }
  configs.push_back(testing::HierarchicalOptions(Algorithm::kFullBidir, 2));
  std::vector<testing::Buffer> out(size_t(n), testing::Buffer(DType::kFloat32, kCount));
  for (const AllReduceOptions& o : configs) {
    const std::string what(AlgorithmName(o.algorithm));
    std::vector<uint64_t> scratch(static_cast<size_t>(n), 0);
    const auto st = testing::RunRanks(n, [&](Communicator& c) {
      const size_t r = size_t(c.rank());
      Status s = c.AllReduce(in[r].data(), out[r].data(), kCount, DType::kFloat32, o);
      scratch[r] = c.stats().scratch_bytes;
      return s;
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(st[size_t(r)].ok()) << what << ": " << st[size_t(r)].ToString();
      EXPECT_LE(scratch[size_t(r)], kBound) << what << ": rank " << r;
      EXPECT_GT(scratch[size_t(r)], 0u) << what << ": rank " << r;
      if (r > 0) EXPECT_TRUE(out[size_t(r)] == out[0]) << what << ": rank " << r << " differs";
    }
    const std::vector<double> bound = testing::ErrorBound(in, o, DType::kFloat32);
    size_t bad = 0;
    for (size_t i = 0; i < kCount; ++i)
      if (!(std::fabs(out[0].Get(i) - exact[i]) <= bound[i])) ++bad;
    EXPECT_EQ(bad, 0u) << what;
    std::printf("%-14s scratch per rank %.1f MiB\n", what.c_str(), double(scratch[0]) / (1 << 20));
  }
}

}  // namespace
}  // namespace equarx
