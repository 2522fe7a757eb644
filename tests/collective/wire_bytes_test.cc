// Wire bytes: what the transport counts for a call equals what the plan's lanes predict
// (Communicator::WireBytesPerRank, algo::PlanWireBytes), for every algorithm of the library
// table, every phase choice, codec and scale format, on rank counts and sizes with ragged
// shards and microshards. The executor and the byte count read the same lanes, so this is
// what ties the count to the schedule that really runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/harness.h"

namespace equarx::testing {
namespace {

TEST(WireBytes, EveryAlgorithmSendsWhatItsPlanPredicts) {
  size_t num_algos = 0;
  const EnumInfo* algos = AlgorithmTable(&num_algos);
  for (int n : {2, 3, 5}) {
    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(CreateInProcessGroup(n, &comms).ok());
    for (size_t a = 0; a < num_algos; ++a)
      for (Phases ph : {Phases::kRS, Phases::kAG, Phases::kRSAG})
        for (Codec codec : {Codec::kInt8, Codec::kInt5, Codec::kInt4, Codec::kFp8E4M3})
          for (size_t count : {size_t(1), size_t(1000), size_t(70001)}) {
            AllReduceOptions o;
            o.algorithm = Algorithm(algos[a].id);
            o.phases = ph;
            o.codec = codec;
            o.scale = count == 1000 ? ScaleFormat::kBF16 : ScaleFormat::kF32;
            o.block = count == 1000 ? 32 : 64;
            o.microshards = 3;
            o.quantize_min_bytes = 1;
            o.validate = false;  // count the collective's own bytes only
            if (o.algorithm == Algorithm::kHierarchical) o.ranks_per_host = 2;
            if (o.algorithm == Algorithm::kNaiveFp8 && (ph != Phases::kRSAG || codec != Codec::kInt8))
              continue;
            const std::string what = std::string(algos[a].name) + " " +
                                     std::string(PhasesName(ph)) + " " +
                                     std::string(CodecName(codec)) + " n=" + std::to_string(n) +
                                     " count=" + std::to_string(count);
            const uint64_t before = comms[0]->stats().bytes_sent;
            std::vector<std::vector<float>> buf(size_t(n), std::vector<float>(count, 1.0f));
            const auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
              auto& b = buf[size_t(c.rank())];
              return c.AllReduce(b.data(), b.data(), count, DType::kFloat32, o);
            });
            for (int r = 0; r < n; ++r)
              ASSERT_TRUE(st[size_t(r)].ok()) << what << ": " << st[size_t(r)].ToString();
            // WireBytesPerRank counts rank 0's bytes (ranks with ragged shards send more or less).
            EXPECT_EQ(comms[0]->stats().bytes_sent - before, comms[0]->WireBytesPerRank(count, DType::kFloat32, o))
                << what;
          }
  }
}

}  // namespace
}  // namespace equarx::testing
