// Bounded scratch (executor.cc "Waves", one_shot.cc "Pieces", hierarchical.cc "Chunk groups"),
// on thread ranks: with the scratch floor lowered so that every algorithm needs several waves,
// pieces or chunk groups, each gives bit for bit the output (and, in waves, the error-feedback
// residual) of the same call run whole; every rank's scratch stays within ScratchBound; and the
// bytes each rank sends are the count's (PlanWireBytes, HierarchicalWireBytes) with that floor.
// The real floor at 256 MiB is checked through the public API in scratch_bound_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algo/hierarchical.h"
#include "algo/one_shot.h"
#include "algo/resolve.h"
#include "algo/scratch.h"
#include "support/oracle.h"
#include "transport/inproc/inproc_transport.h"
#include "world.h"

namespace equarx {
namespace {

using testing::Buffer;

struct Outcome {
  std::vector<Buffer> out;
  std::vector<std::vector<float>> residual;
  std::vector<uint64_t> bytes, scratch;
  std::vector<Status> status;
};

// Runs the resolved call on every rank of a new in-process group with `floor` as its scratch
// floor (the executor, or hierarchical's schedule, without the communicator).
Outcome RunResolved(const algo::Resolved& r, const std::vector<Buffer>& in, size_t floor, bool ef) {
  const size_t n = in.size(), count = in[0].size();
  Outcome o;
  o.out.assign(n, Buffer(in[0].dtype, count));
  o.residual.assign(n, std::vector<float>(ef ? count : 0));
  for (size_t q = 0; q < n && ef; ++q)
    for (size_t i = 0; i < count; ++i) o.residual[q][i] = float(1e-3 * double((i * 7 + q) % 13));
  o.bytes.assign(n, 0);
  o.scratch.assign(n, 0);
  auto fabric = transport::CreateInprocFabric(int(n));
  o.status = tools::RunOnRanks(int(n), [&](int rank) {
    const size_t q = size_t(rank);
    auto t = transport::CreateInprocTransport(fabric, rank);
    algo::Scratch scratch;
    algo::HierarchicalScratch own;
    algo::RunArgs a;
    a.transport = t.get();
    a.dtype = in[q].dtype;
    a.send = in[q].data();
    a.recv = o.out[q].data();
    a.count = count;
    a.microshards = r.options.microshards;
    a.tag_base = uint64_t(1) << 32;
    a.deadline = transport::Clock::now() + std::chrono::seconds(120);
    a.residual = ef ? o.residual[q].data() : nullptr;
    if (r.rotate) a.rotation = codec::RotationSpec{uint32_t(RotationBlockOf(r.options)), r.options.seed, false};
    a.scratch_floor = floor;
    const Status st = r.hierarchical ? algo::ExecuteHierarchical(r, a, &scratch, &own)
                                     : algo::Execute(r.plan, a, &scratch);
    o.bytes[q] = t->bytes_sent();
    o.scratch[q] = scratch.capacity() + own.bytes.capacity();
    return st;
  });
  return o;
}

constexpr size_t kLowFloor = 16 << 10;

// The call `o` on `in`, whole and with kLowFloor: the same bits, the bytes counted, and the
// scratch within ScratchBound (flat plans; hierarchical's chunks are at least 1 MiB per other
// host, more than this floor allows at these sizes: its scratch must only shrink, and
// scratch_bound_test.cc checks its bound at the real floor).
void ExpectSameBitsInBoundedScratch(const AllReduceOptions& opts, const std::vector<Buffer>& in, bool ef,
                                    const std::string& what) {
  const int n = int(in.size());
  const DType dtype = in[0].dtype;
  const size_t count = in[0].size();
  const env::Settings env = env::Read();
  algo::AutoTables tables(env);
  algo::Resolved r;
  ASSERT_TRUE(algo::Resolve({opts, dtype, count, n, false, ef}, env, &tables, &r).ok()) << what;
  if (!r.hierarchical) {
    const size_t parts = r.plan.one_shot ? algo::OneShotPieces(r.plan, n, kLowFloor)
                                         : algo::PlanWaves(r.plan, n, r.options.microshards, kLowFloor, ef);
    ASSERT_GT(parts, 1u) << what << ": the low floor must cut the call";
    ASSERT_EQ(r.plan.one_shot ? algo::OneShotPieces(r.plan, n)
                              : algo::PlanWaves(r.plan, n, r.options.microshards, algo::kScratchFloor, ef),
              1u) << what << ": the call must run whole at the real floor";
  }
  const Outcome whole = RunResolved(r, in, algo::kScratchFloor, ef);
  const Outcome cut = RunResolved(r, in, kLowFloor, ef);
  const size_t bound = algo::ScratchBound(dtype, count, kLowFloor);
  for (int q = 0; q < n; ++q) {
    const size_t i = size_t(q);
    ASSERT_TRUE(whole.status[i].ok()) << what << ": " << whole.status[i].ToString();
    ASSERT_TRUE(cut.status[i].ok()) << what << ": " << cut.status[i].ToString();
    EXPECT_TRUE(cut.out[i] == whole.out[i]) << what << ": rank " << q << "'s output differs when cut";
    if (!r.plan.one_shot)  // one_shot's pieces each carry the rounding loss of their own 1/N
      EXPECT_TRUE(cut.residual[i] == whole.residual[i]) << what << ": rank " << q << "'s residual differs";
    if (!r.hierarchical) EXPECT_LE(cut.scratch[i], bound) << what << ": rank " << q;
    EXPECT_LT(cut.scratch[i], whole.scratch[i]) << what << ": rank " << q << " (the whole call must need more)";
    const uint64_t counted = r.hierarchical
                                 ? algo::HierarchicalWireBytes(r, dtype, count, q, n, kLowFloor)
                                 : algo::PlanWireBytes(r.plan, q, n, r.options.microshards, kLowFloor, ef);
    EXPECT_EQ(cut.bytes[i], counted) << what << ": rank " << q;
  }
  for (int q = 1; q < n; ++q) EXPECT_TRUE(cut.out[size_t(q)] == cut.out[0]) << what << ": rank " << q;
}

TEST(BoundedScratch, EveryFlatAlgorithmGivesTheBitsOfOneCall) {
  int runs = 0;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi,
                      Algorithm::kNaiveFp8, Algorithm::kTwoShot, Algorithm::kOneShot, Algorithm::kOneShotRaw,
                      Algorithm::kRecursiveDoubling})
    for (DType dtype : {DType::kFloat32, DType::kBFloat16})
      for (bool ef : {false, true}) {
        if (ef && (dtype != DType::kFloat32 || !IsQuantized(a))) continue;  // error feedback: f32, quantized
        AllReduceOptions o;
        o.algorithm = a;
        o.scale = a == Algorithm::kTwoShot ? ScaleFormat::kTwoLevel : ScaleFormat::kF32;  // a header per message
        o.block = a == Algorithm::kTwoShot ? 16 : 64;
        const auto in = testing::MakeInputs(4, 50021, dtype, 31 + uint64_t(a));
        ExpectSameBitsInBoundedScratch(o, in, ef,
                                       std::string(AlgorithmName(a)) + " " + std::string(DTypeName(dtype)) + (ef ? " ef" : ""));
        ++runs;
      }
  EXPECT_EQ(runs, 9 * 2 + 6);
}

TEST(BoundedScratch, StochasticRoundingAndOddRanksGiveTheBitsOfOneCall) {
  for (Algorithm a : {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kOneShot}) {
    AllReduceOptions o;
    o.algorithm = a;
    o.rounding = Rounding::kStochastic;
    o.seed = 7;
    o.microshards = 3;
    ExpectSameBitsInBoundedScratch(o, testing::MakeInputs(5, 40009, DType::kFloat32, 5), false,
                                   std::string(AlgorithmName(a)) + " stochastic, 5 ranks");
  }
}

TEST(BoundedScratch, HierarchicalRunsInChunkGroupsWithTheBitsOfOneGroup) {
  // 2 hosts of 2 (4 chunks a shard, one a group), and one host of 4 (2 chunks a shard): 8 MiB
  // of f32.
  for (uint32_t per_host : {2u, 4u})
    for (Algorithm inner : {Algorithm::kFullBidir, Algorithm::kTwoShot}) {
      const auto in = testing::MakeInputs(4, (size_t(1) << 21) + 4099, DType::kFloat32, 11);
      ExpectSameBitsInBoundedScratch(testing::HierarchicalOptions(inner, per_host), in, false,
                                     "hierarchical " + std::string(AlgorithmName(inner)) + " per_host " +
                                         std::to_string(per_host));
    }
}

}  // namespace
}  // namespace equarx
