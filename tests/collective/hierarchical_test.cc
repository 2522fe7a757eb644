// Algorithm hierarchical on thread ranks with virtual hosts (ranks_per_host): every layout
// (even, uneven, one host, one rank per host), every inner algorithm, f32 and bf16, with and
// without the rotation. Every rank bitwise identical; the error within the inner algorithm's
// bound over the host sums; the bytes each rank sends equal the model's count; bad
// combinations refused on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/hierarchical.h"
#include "algo/resolve.h"
#include "algo/tune_table.h"
#include "core/validate.h"
#include "equarx/equarx.hpp"
#include "support/harness.h"
#include "support/oracle.h"

namespace equarx {
namespace {

using testing::Buffer;

struct Outcome {
  std::vector<Buffer> out;
  std::vector<uint64_t> bytes;
  std::vector<Status> status;
};

// The group's transports report the hosts of o.ranks_per_host (unset: one host).
Outcome Reduce(const std::vector<Buffer>& in, const AllReduceOptions& o) {
  const int n = int(in.size());
  Outcome run;
  run.out.assign(size_t(n), Buffer(in[0].dtype, in[0].size()));
  run.bytes.assign(size_t(n), 0);
  run.status = testing::RunRanks(n, [&](Communicator& c) {
    const size_t r = size_t(c.rank());
    Status s = c.AllReduce(in[r].data(), run.out[r].data(), in[r].size(), in[r].dtype, o);
    run.bytes[r] = c.stats().bytes_sent;
    return s;
  }, int(o.ranks_per_host));
  return run;
}

void ExpectHierarchical(const std::vector<Buffer>& in, const AllReduceOptions& o,
                        const std::string& what) {
  const Outcome run = Reduce(in, o);
  const int n = int(in.size());
  for (int r = 0; r < n; ++r) ASSERT_TRUE(run.status[size_t(r)].ok()) << what << ": " << run.status[size_t(r)].message();
  for (int r = 1; r < n; ++r) EXPECT_TRUE(run.out[size_t(r)] == run.out[0]) << what << ": rank " << r << " differs";

  // Bytes: every rank's count is the schedule's (plus the argument check's).
  const env::Settings env = env::Read();
  algo::AutoTables tables(env);
  algo::Resolved resolved;
  ASSERT_TRUE(algo::Resolve({o, in[0].dtype, in[0].size(), n}, env, &tables, &resolved).ok()) << what;
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(run.bytes[size_t(r)], algo::HierarchicalWireBytes(resolved, in[0].dtype, in[0].size(), r, n) +
                                        core::CheckBytesPerRank(n, o.ranks_per_host ? int(o.ranks_per_host) : n))
        << what << ": rank " << r;

  // Error: |result - exact| <= |exact - sum of the host sums| + the inner bound on them.
  if (o.inner == Algorithm::kAuto) return;  // which plan auto ran depends on the shard size
  const std::vector<double> exact = testing::ExactSum(in);
  AllReduceOptions ob = o;  // the rotation as the caller gave it (a default one is not
  ob.ranks_per_host = resolved.options.ranks_per_host;  // applied to an unquantized inner step)
  const std::vector<double> bound = testing::ErrorBound(in, ob, in[0].dtype);
  size_t bad = 0;
  for (size_t i = 0; i < exact.size(); ++i)
    if (!(std::fabs(run.out[0].Get(i) - exact[i]) <= bound[i])) ++bad;
  EXPECT_EQ(bad, 0u) << what;
}

TEST(Hierarchical, EveryLayoutInnerAlgorithmAndDtype) {
  const std::vector<std::pair<int, int>> layouts = {{4, 2}, {6, 3}, {5, 2}, {3, 2}, {4, 4},
                                                   {4, 1}, {7, 3}, {2, 2}};
  for (auto [n, per_host] : layouts)
    for (Algorithm inner : {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kRing,
                            Algorithm::kSemi, Algorithm::kFull, Algorithm::kAuto})
      for (DType dtype : {DType::kFloat32, DType::kBFloat16})
        for (size_t count : {size_t(1), size_t(1000), size_t(20011)}) {
          AllReduceOptions o = testing::HierarchicalOptions(inner, uint32_t(per_host));
          o.block = 32;
          o.rotation = count == 20011 ? Rotation::kDefault : Rotation::kNone;
          const auto in = testing::MakeInputs(n, count, dtype, 100 + n * 7 + per_host);
          ExpectHierarchical(in, o,
                             "n=" + std::to_string(n) + " per_host=" + std::to_string(per_host) +
                                 " inner=" + std::string(AlgorithmName(inner)) + " " +
                                 std::string(DTypeName(dtype)) + " count=" + std::to_string(count));
        }
}

TEST(Hierarchical, IntegerSumsAreExactWithAnUnquantizedInnerRing) {
  const AllReduceOptions o = testing::HierarchicalOptions(Algorithm::kRing, 3);
  const auto in = testing::MakeInputs(8, 5000, DType::kFloat32, 7, /*integers=*/true);
  const Outcome run = Reduce(in, o);
  const std::vector<double> exact = testing::ExactSum(in);
  for (int r = 0; r < 8; ++r) {
    ASSERT_TRUE(run.status[size_t(r)].ok()) << run.status[size_t(r)].message();
    for (size_t i = 0; i < exact.size(); ++i) ASSERT_EQ(run.out[size_t(r)].Get(i), exact[i]) << i;
  }
}

TEST(Hierarchical, RanksPerHostFromTheEnvironmentAndInPlace) {
  ::setenv("EQUARX_RANKS_PER_HOST", "2", 1);
  const AllReduceOptions o = testing::HierarchicalOptions(Algorithm::kTwoShot);  // per host: unset
  const auto in = testing::MakeInputs(4, 3001, DType::kBFloat16, 11);
  std::vector<Buffer> io = in;
  const Outcome ref = Reduce(in, testing::HierarchicalOptions(Algorithm::kTwoShot, 2));
  auto st = testing::RunRanks(4, [&](Communicator& c) {
    Buffer& b = io[size_t(c.rank())];
    return c.AllReduce(b.data(), b.data(), b.size(), b.dtype, o);  // in place
  });
  ::unsetenv("EQUARX_RANKS_PER_HOST");
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(st[size_t(r)].ok()) << st[size_t(r)].message();
    EXPECT_TRUE(io[size_t(r)] == ref.out[0]) << "rank " << r;
  }
}

// Large calls run as a pipeline of chunks, each with its own inner AllReduce: every rank
// agrees, the bytes are the model's, in-place gives the same bits, integer sums stay exact
// (a chunk summed or sent twice, or not at all, would show), and a host of fewer ranks, whose
// ranks own several shards, pipelines each of them.
TEST(Hierarchical, PipelinedChunks) {
  for (auto [n, per_host] : std::vector<std::pair<int, int>>{{4, 2}, {5, 3}}) {
    const size_t count = size_t(3) << 20;
    AllReduceOptions o = testing::HierarchicalOptions(Algorithm::kTwoShot, uint32_t(per_host));
    const std::string what = "n=" + std::to_string(n) + " per_host=" + std::to_string(per_host);
    for (int s = 0; s < per_host; ++s)
      EXPECT_GE(algo::HierarchicalChunks(ResolveOptions(o), DType::kFloat32, count, n, s).size(), 2u) << what;
    const auto in = testing::MakeInputs(n, count, DType::kFloat32, 41 + n);
    ExpectHierarchical(in, o, what);

    std::vector<Buffer> io = in;
    const Outcome ref = Reduce(in, o);
    auto st = testing::RunRanks(n, [&](Communicator& c) {
      Buffer& b = io[size_t(c.rank())];
      return c.AllReduce(b.data(), b.data(), b.size(), b.dtype, o);  // in place
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(st[size_t(r)].ok()) << what << ": " << st[size_t(r)].message();
      EXPECT_TRUE(io[size_t(r)] == ref.out[0]) << what << ": in place, rank " << r;
    }

    o.inner = Algorithm::kRing;
    const auto ints = testing::MakeInputs(n, count, DType::kFloat32, 7, /*integers=*/true);
    const Outcome exact_run = Reduce(ints, o);
    const std::vector<double> exact = testing::ExactSum(ints);
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(exact_run.status[size_t(r)].ok()) << exact_run.status[size_t(r)].message();
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) bad += exact_run.out[size_t(r)].Get(i) != exact[i];
      EXPECT_EQ(bad, 0u) << what << ": rank " << r;
    }
  }
}

TEST(Hierarchical, RefusalsOnEveryRank) {
  const auto in = testing::MakeInputs(4, 1000, DType::kFloat16, 3);
  auto expect_refused = [&](const AllReduceOptions& o, const char* needle) {
    const Outcome run = Reduce(in, o);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(run.status[size_t(r)].code(), StatusCode::kInvalidArgument) << needle;
      EXPECT_NE(run.status[size_t(r)].message().find(needle), std::string::npos)
          << run.status[size_t(r)].message();
    }
  };
  AllReduceOptions o = testing::HierarchicalOptions(Algorithm::kHierarchical, 2);
  expect_refused(o, "not an algorithm across hosts");
  o.inner = Algorithm::kNaiveFp8;
  expect_refused(o, "not an algorithm across hosts");
  o.inner = Algorithm::kRing;  // an unquantized f16 hop across hosts, rotated on request
  o.rotation = Rotation::kHadamard;
  expect_refused(o, "needs every hop across hosts quantized");
  // The same group still works afterwards, and a default rotation is simply not applied there.
  o.rotation = Rotation::kDefault;
  const Outcome ok = Reduce(in, o);
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(ok.status[size_t(r)].ok()) << ok.status[size_t(r)].message();

  // Error feedback is not available yet: a clear error on every rank.
  std::vector<std::vector<float>> residual(4, std::vector<float>(1000, 0.0f));
  o.inner = Algorithm::kFullBidir;
  auto st = testing::RunRanks(4, [&](Communicator& c) {
    std::vector<uint8_t> out(in[0].bytes.size());
    AllReduceExtras x;
    x.residual = residual[size_t(c.rank())].data();
    return c.AllReduce(in[size_t(c.rank())].data(), out.data(), 1000, DType::kFloat16, o, x);
  });
  for (int r = 0; r < 4; ++r) EXPECT_NE(st[size_t(r)].message().find("not available with hierarchical"), std::string::npos);
}

}  // namespace
}  // namespace equarx
