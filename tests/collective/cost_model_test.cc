// The cost model (src/algo/cost_model.h) against the library: the bytes it predicts are the
// bytes the ranks hand to the transport, exactly, for every algorithm, codec, rank count and
// size (odd ones included), with and without the argument check; and its time terms follow
// the model's own rules (host egress, the hierarchical schedule's bytes).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "algo/cost_model.h"
#include "algo/resolve.h"
#include "core/validate.h"
#include "equarx/equarx.hpp"
#include "support/harness.h"
#include "support/oracle.h"

namespace equarx {
namespace {

algo::Machine FlatMachine(int ranks) {
  algo::Machine m;
  m.hosts = ranks;
  m.ranks_per_host = 1;
  m.check_bytes = sizeof(core::Descriptor);
  return m;
}

// Bytes each rank sent during one AllReduce on an in-process group whose transports report
// hosts of `ranks_per_host` ranks (the layout of the machine the model is asked about).
std::vector<uint64_t> MeasuredBytes(int n, int ranks_per_host, size_t count, DType dtype, const AllReduceOptions& o) {
  std::vector<uint64_t> sent(n);
  const size_t bytes = count * DTypeSize(dtype);
  auto st = testing::RunRanks(n, [&](Communicator& c) {
    std::vector<uint8_t> in(bytes, 0), out(bytes);
    // Small finite values in every dtype (0x3C00 is 1.0 in f16 and ~0.0078 in bf16).
    for (size_t i = 0; i + 1 < bytes; i += 2) in[i + 1] = 0x3C;
    Status s = c.AllReduce(in.data(), out.data(), count, dtype, o);
    sent[c.rank()] = c.stats().bytes_sent;
    return s;
  }, ranks_per_host);
  for (int r = 0; r < n; ++r) EXPECT_TRUE(st[r].ok()) << st[r].message();
  return sent;
}

TEST(CostModel, WireBytesAreWhatTheRanksSend) {
  int checked = 0;
  for (int n : {2, 3, 4, 7})
    for (Algorithm a : {Algorithm::kRing, Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi,
                        Algorithm::kTwoShot, Algorithm::kNaiveFp8, Algorithm::kAuto, Algorithm::kOneShot,
                        Algorithm::kOneShotRaw, Algorithm::kRecursiveDoubling})
      for (Codec codec : {Codec::kInt8, Codec::kInt4, Codec::kFp8E4M3})
        for (size_t count : {size_t(1), size_t(1000), size_t(100003)})
          for (bool validate : {true, false}) {
            if (!TakesCodec(a) && codec != Codec::kInt8) continue;
            AllReduceOptions o;
            o.algorithm = a;
            o.codec = codec;
            o.block = 32;
            o.validate = validate;
            o.ranks_per_host = 1;  // the machine's layout: n hosts of one rank
            const DType dtype = a == Algorithm::kNaiveFp8 ? DType::kFloat32 : DType::kBFloat16;
            const auto p = algo::PredictFlat(o, dtype, count, FlatMachine(n),
                                             algo::AutoTableOf(o, dtype, n, env::Read()));
            const auto sent = MeasuredBytes(n, 1, count, dtype, o);
            const std::string what = std::string(AlgorithmName(a)) + " " +
                                     std::string(CodecName(codec)) + " n=" + std::to_string(n) +
                                     " count=" + std::to_string(count) +
                                     (validate ? " validate" : "");
            // Rank 0's bytes (PlanWireBytes of rank 0; with odd shards others differ).
            EXPECT_EQ(p.wire_bytes_per_rank, sent[0]) << what;
            EXPECT_EQ(p.host_egress_bytes, sent[0]) << what;  // one rank per host
            ++checked;
          }
  EXPECT_EQ(checked, 4 * (6 * 3 + 4) * 3 * 2);  // 528 calls
}

TEST(CostModel, HierarchicalBytesAreWhatRankZeroSends) {
  const algo::TuneTable table = algo::TuneTable::Defaults();
  for (auto [hosts, per_host] : {std::pair{2, 2}, {3, 2}, {2, 3}, {4, 2}, {1, 4}})
    for (Algorithm inner : {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kRing})
      for (size_t count : {size_t(1000), size_t(100003)})
        for (bool validate : {true, false}) {
          AllReduceOptions o = testing::HierarchicalOptions(inner, uint32_t(per_host));
          o.validate = validate;
          algo::Machine m = FlatMachine(hosts);
          m.ranks_per_host = per_host;
          const auto p = algo::PredictFlat(o, DType::kBFloat16, count, m, table);
          const auto sent = MeasuredBytes(hosts * per_host, per_host, count, DType::kBFloat16, o);
          EXPECT_EQ(p.wire_bytes_per_rank, sent[0])
              << hosts << "x" << per_host << " " << AlgorithmName(inner) << " count=" << count
              << (validate ? " validate" : "");
        }
}

TEST(CostModel, HostEgressFollowsThePlacement) {
  const algo::TuneTable table = algo::TuneTable::Defaults();
  AllReduceOptions o;
  o.algorithm = Algorithm::kFullBidir;
  o.validate = false;
  algo::Machine m;
  m.hosts = 4;
  m.ranks_per_host = 2;
  const size_t count = size_t(1) << 20;
  const auto ring = algo::PredictFlat(o, DType::kBFloat16, count, m, table);
  // A ring-shaped plan: a host sends what one rank sends, the other R - 1 edges stay inside.
  EXPECT_EQ(ring.host_egress_bytes, ring.wire_bytes_per_rank);
  EXPECT_EQ(ring.intra_host_bytes, ring.wire_bytes_per_rank);
  o.algorithm = Algorithm::kTwoShot;
  const auto a2a = algo::PredictFlat(o, DType::kBFloat16, count, m, table);
  // two_shot: of a rank's 7 peers, 6 are on other hosts; two ranks per host.
  EXPECT_EQ(a2a.host_egress_bytes, uint64_t(double(a2a.wire_bytes_per_rank) * 2 * 6 / 7));
  EXPECT_EQ(a2a.intra_host_bytes, uint64_t(double(a2a.wire_bytes_per_rank) * 1 / 7));

  // Hierarchical: the host sends R shards' flat plans over the hosts — the bytes of a flat
  // plan over H ranks of the whole tensor (up to the shards' block rounding).
  o.algorithm = Algorithm::kFullBidir;
  const auto h = algo::PredictHierarchical(o, DType::kBFloat16, count, m, table);
  algo::Machine hosts_only = m;
  hosts_only.ranks_per_host = 1;
  const auto flat_hosts = algo::PredictFlat(o, DType::kBFloat16, count, hosts_only, table);
  EXPECT_NEAR(double(h.host_egress_bytes), double(flat_hosts.host_egress_bytes),
              1e-3 * double(flat_hosts.host_egress_bytes));
  EXPECT_LT(h.host_egress_bytes, ring.host_egress_bytes);  // 2(H-1)/H < 2(N-1)/N
}

TEST(CostModel, TimeTermsFollowTheResources) {
  const algo::TuneTable table = algo::TuneTable::Defaults();
  AllReduceOptions o;
  o.algorithm = Algorithm::kFull;
  o.rotation = Rotation::kNone;
  algo::Machine m;
  m.hosts = 4;
  const size_t count = size_t(1) << 24;
  const auto slow = algo::PredictFlat(o, DType::kFloat32, count, m, table);
  m.link_bytes_per_s *= 10;
  const auto fast = algo::PredictFlat(o, DType::kFloat32, count, m, table);
  EXPECT_NEAR(slow.network_s / fast.network_s, 10.0, 1e-9);
  EXPECT_EQ(slow.codec_s, fast.codec_s);
  // Ranks sharing cores slow the codec; more threads than cores do not help.
  m.ranks_per_host = 4;
  m.cores_per_host = 2;
  m.threads = 8;
  EXPECT_DOUBLE_EQ(algo::EffectiveThreads(m), 0.5);
  // Intra-host copies are CPU work too: with half a core per rank they take twice as long
  // as with a core each (and no longer once every rank has a core of its own).
  auto memory_s = [&](Algorithm a, double cores) {
    AllReduceOptions q = o;
    q.algorithm = a;
    q.inner = Algorithm::kFullBidir;
    algo::Machine c = m;
    c.cores_per_host = cores;
    return algo::PredictFlat(q, DType::kFloat32, count, c, table).memory_s;
  };
  for (Algorithm a : {Algorithm::kFull, Algorithm::kHierarchical}) {
    ASSERT_GT(memory_s(a, 4), 0.0);
    EXPECT_NEAR(memory_s(a, 2) / memory_s(a, 4), 2.0, 1e-9);
    EXPECT_DOUBLE_EQ(memory_s(a, 64), memory_s(a, 4));
  }
  // The rotation is charged only where it applies.
  o.rotation = Rotation::kHadamard;
  m = algo::Machine{};
  const auto rotated = algo::PredictFlat(o, DType::kFloat32, count, m, table);
  o.rotation = Rotation::kNone;
  const auto plain = algo::PredictFlat(o, DType::kFloat32, count, m, table);
  EXPECT_NEAR(rotated.codec_s - plain.codec_s, 2.0 * count / m.rates.rotate, 1e-9);
  // Total: latency plus the slowest resource plus one microshard of the other.
  EXPECT_NEAR(plain.seconds,
              plain.latency_s + std::max({plain.network_s, plain.memory_s, plain.codec_s}) +
                  std::min(plain.network_s, plain.codec_s) / 4,
              1e-12);
}

}  // namespace
}  // namespace equarx
