// In-process AllReduce: every algorithm x phases x dtype x rank count x size, against an f64
// oracle. Oracles: all ranks bitwise identical; the unquantized ring exact on integer-valued
// inputs; every configuration within its analytic error bound; the NaN/Inf policy; the
// paper's error level on N(0,1); wire bytes as the plan predicts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

struct Config {
  Algorithm algo;
  Phases phases;
};

std::string Name(const Config& c) {
  return std::string(AlgorithmName(c.algo)) + "/" + std::string(PhasesName(c.phases));
}

const Config kQuantized[] = {
    {Algorithm::kFull, Phases::kRS},       {Algorithm::kFull, Phases::kAG},
    {Algorithm::kFull, Phases::kRSAG},     {Algorithm::kFullBidir, Phases::kRS},
    {Algorithm::kFullBidir, Phases::kAG},  {Algorithm::kFullBidir, Phases::kRSAG},
    {Algorithm::kSemi, Phases::kRS},       {Algorithm::kSemi, Phases::kAG},
    {Algorithm::kSemi, Phases::kRSAG},     {Algorithm::kNaiveFp8, Phases::kRSAG},
    {Algorithm::kTwoShot, Phases::kRS},    {Algorithm::kTwoShot, Phases::kAG},
    {Algorithm::kTwoShot, Phases::kRSAG},  {Algorithm::kOneShot, Phases::kRSAG},
};

const int kRanks[] = {1, 2, 3, 4, 5, 7, 8};

std::vector<size_t> Sizes(int n, size_t block) {
  return {0, 1, block - 1, block, block + 1, size_t(n) * block - 1, 7919, 100003};
}

// Runs the AllReduce on every rank (on hosts of ranks_per_host; 0: one host); returns each
// rank's output.
std::vector<Buffer> Reduce(const std::vector<Buffer>& in, const AllReduceOptions& o,
                           bool in_place, std::vector<Status>* statuses = nullptr, int ranks_per_host = 0) {
  const int n = int(in.size());
  std::vector<Buffer> out = in;
  if (!in_place)
    for (Buffer& b : out) std::fill(b.bytes.begin(), b.bytes.end(), uint8_t(0xA5));
  auto st = RunRanks(n, [&](Communicator& c) {
    const Buffer& src = in_place ? out[size_t(c.rank())] : in[size_t(c.rank())];
    return c.AllReduce(src.data(), out[size_t(c.rank())].data(), in[0].size(), in[0].dtype, o);
  }, ranks_per_host);
  if (statuses) *statuses = st;
  for (size_t r = 0; r < st.size(); ++r) EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r].ToString();
  return out;
}

void ExpectIdentical(const std::vector<Buffer>& out, const std::string& what) {
  for (size_t r = 1; r < out.size(); ++r)
    ASSERT_TRUE(out[r] == out[0]) << what << ": rank " << r << " differs from rank 0";
}

// The unquantized schedules: the ring, one_shot_raw and recursive_doubling; on one host (the
// call check's exchange) and a rank per host (the check's tree for 2, 4 and 8 ranks, in whose
// steps recursive_doubling's ride and one_shot's data leaves).
TEST(Ring, ExactOnIntegerValuedInputs) {
  for (int ranks_per_host : {0, 1})
  for (Algorithm a : {Algorithm::kRing, Algorithm::kOneShotRaw, Algorithm::kRecursiveDoubling})
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int n : kRanks)
      for (size_t count : Sizes(n, 64))
        for (bool in_place : {false, true}) {
          // |x| <= 4 per rank, so every partial sum (<= 32) is exact even in bf16.
          auto in = MakeInputs(n, count, dt, 11 + count, /*integers=*/true);
          AllReduceOptions o;
          o.algorithm = a;
          auto out = Reduce(in, o, in_place, nullptr, ranks_per_host);
          const std::string what = std::string(AlgorithmName(a)) + " " + std::string(DTypeName(dt)) +
                                   " n=" + std::to_string(n) + " count=" + std::to_string(count) +
                                   (ranks_per_host ? " a rank per host" : " one host");
          ExpectIdentical(out, what);
          auto exact = ExactSum(in);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) wrong += out[0].Get(i) != exact[i];
          ASSERT_EQ(wrong, 0u) << what;
        }
}

// Every quantized schedule on one host; one_shot also a rank per host (its data to each of the
// check tree's partners leaves with that step's frame).
TEST(Quantized, WithinErrorBoundAndIdenticalOnEveryRank) {
  for (const Config& c : kQuantized)
  for (int ranks_per_host : {0, 1})
    for (DType dt : {DType::kBFloat16, DType::kFloat32, DType::kFloat16})
      for (int n : kRanks)
        for (size_t count : Sizes(n, 64)) {
          if (ranks_per_host && c.algo != Algorithm::kOneShot) continue;
          const bool in_place = (count % 2) == 1;
          auto in = MakeInputs(n, count, dt, 7 + n * 31 + count);
          AllReduceOptions o;
          o.algorithm = c.algo;
          o.phases = c.phases;
          o.block = 64;
          auto out = Reduce(in, o, in_place, nullptr, ranks_per_host);
          const std::string what = Name(c) + " " + std::string(DTypeName(dt)) +
                                   " n=" + std::to_string(n) + " count=" + std::to_string(count) +
                                   (ranks_per_host ? " a rank per host" : " one host");
          ExpectIdentical(out, what);
          auto exact = ExactSum(in);
          auto bound = ErrorBound(in, o, dt);
          for (size_t i = 0; i < count; ++i) {
            const double err = std::fabs(out[0].Get(i) - exact[i]);
            ASSERT_LE(err, bound[i]) << what << " element " << i << " got " << out[0].Get(i)
                                     << " exact " << exact[i];
          }
        }
}

TEST(Quantized, OtherBlockSizesAndMicroshards) {
  const int n = 5;
  for (size_t block : {32, 128, 1000, 4096})
    for (size_t micro : {1, 3, 64}) {
      auto in = MakeInputs(n, 50021, DType::kBFloat16, block + micro);
      for (const Config& c : kQuantized) {
        AllReduceOptions o;
        o.algorithm = c.algo;
        o.phases = c.phases;
        o.block = block;
        o.microshards = micro;
        auto out = Reduce(in, o, false);
        const std::string what = Name(c) + " block=" + std::to_string(block) + " m=" + std::to_string(micro);
        ExpectIdentical(out, what);
        auto exact = ExactSum(in);
        auto bound = ErrorBound(in, o, DType::kBFloat16);
        for (size_t i = 0; i < exact.size(); ++i)
          ASSERT_LE(std::fabs(out[0].Get(i) - exact[i]), bound[i]) << what << " element " << i;
      }
    }
}

TEST(Quantized, ResultDoesNotDependOnMicroshardsOrRepetition) {
  auto in = MakeInputs(4, 123457, DType::kBFloat16, 99);
  for (const Config& c : kQuantized) {
    AllReduceOptions o;
    o.algorithm = c.algo;
    o.phases = c.phases;
    o.microshards = 1;
    auto a = Reduce(in, o, false);
    o.microshards = 7;
    auto b = Reduce(in, o, false);
    auto again = Reduce(in, o, true);
    EXPECT_TRUE(a[0] == b[0]) << Name(c);
    EXPECT_TRUE(b[0] == again[0]) << Name(c);
  }
}

double Mse(const std::vector<Buffer>& in, const std::vector<double>& exact, Config c,
           bool f32_partials = false) {
  AllReduceOptions o;
  o.algorithm = c.algo;
  o.phases = c.phases;
  o.block = 64;  // the paper's setting: block 64, f32 scales
  o.scale = ScaleFormat::kF32;
  o.f32_partials = f32_partials;
  return MseAgainstRounded(Reduce(in, o, false)[0], exact);
}

// The level of error the paper reports on N(0,1) (8 ranks, bf16, int8, block 64), measured
// on a smaller tensor: an exact f64 simulation of the schedules (in the spec) gives full
// 0.00131, semi 0.00089, ag-only 0.00032 (its RS adds no rounding: f32_partials here),
// two-shot 0.00057 (the target for it: <= 0.0008);
// naive fp8 about 0.13 (the paper's figure).
TEST(Quantized, PaperErrorLevelOnNormalData) {
  auto in = MakeInputs(8, 1 << 18, DType::kBFloat16, 2024);
  auto exact = ExactSum(in);
  struct Row { Config c; bool f32_partials; double expect; };
  const Row rows[] = {{{Algorithm::kFull, Phases::kRSAG}, false, 0.00131},
                      {{Algorithm::kFullBidir, Phases::kRSAG}, false, 0.00131},
                      {{Algorithm::kSemi, Phases::kRSAG}, false, 0.00089},
                      {{Algorithm::kFull, Phases::kAG}, true, 0.00032},
                      {{Algorithm::kTwoShot, Phases::kRSAG}, false, 0.00057},
                      {{Algorithm::kNaiveFp8, Phases::kRSAG}, false, 0.13}};
  for (const Row& row : rows) {
    const double mse = Mse(in, exact, row.c, row.f32_partials);
    EXPECT_GT(mse, row.expect * 0.8) << Name(row.c);
    EXPECT_LT(mse, row.expect * 1.2) << Name(row.c);
  }
  // With bf16 partials on the wire the RS adds the bf16 ring's own rounding error, and the
  // two (nearly independent) errors add up.
  const double ring = Mse(in, exact, {Algorithm::kRing, Phases::kRSAG});
  const double ag_f32 = Mse(in, exact, {Algorithm::kFull, Phases::kAG}, true);
  const double ag_bf16 = Mse(in, exact, {Algorithm::kFull, Phases::kAG});
  EXPECT_NEAR(ag_bf16, ring + ag_f32, 0.15 * (ring + ag_f32));
  EXPECT_GT(ring, 0.5e-4);  // the bf16 ring is not exact: 7 bf16 roundings of growing partials
}

TEST(NonFinite, NanAndInfLandExactlyWhereTheIeeeSumHasThem) {
  const size_t count = 1000;
  for (DType dt : {DType::kBFloat16, DType::kFloat32, DType::kFloat16})
    for (int n : {2, 3, 5, 8}) {
      auto in = MakeInputs(n, count, dt, 5);
      const double inf = INFINITY;
      // element -> (rank, value): a lone NaN, +Inf, -Inf, +Inf and -Inf on two ranks, two +Inf.
      in[0].Set(10, NAN);
      in[size_t(n - 1)].Set(100, inf);
      in[1].Set(200, -inf);
      in[0].Set(300, inf);
      in[1].Set(300, -inf);
      in[0].Set(400, inf);
      in[1].Set(400, inf);
      in[0].Set(999, NAN);
      for (Config c : kQuantized) {
        for (Algorithm a : {c.algo}) {
          AllReduceOptions o;
          o.algorithm = a;
          o.phases = c.phases;
          auto out = Reduce(in, o, false);
          const std::string what = Name(c) + " " + std::string(DTypeName(dt)) + " n=" + std::to_string(n);
          ExpectIdentical(out, what);
          auto exact = ExactSum(in);  // IEEE in f64: NaN / ±Inf where an exact sum has them
          // Bound from the finite elements only: replace non-finite inputs by 0.
          auto finite = in;
          for (Buffer& b : finite)
            for (size_t i = 0; i < count; ++i)
              if (!std::isfinite(b.Get(i))) b.Set(i, 0.0);
          auto bound = ErrorBound(finite, o, dt);
          for (size_t i = 0; i < count; ++i) {
            const double got = out[0].Get(i);
            if (std::isnan(exact[i])) {
              ASSERT_TRUE(std::isnan(got)) << what << " element " << i;
            } else if (std::isinf(exact[i])) {
              ASSERT_EQ(got, exact[i]) << what << " element " << i;
            } else {
              // Finite elements, also next to a non-finite one in its block (which is coded
              // with +-126 instead of +-127: 127/126 of the usual error at most).
              ASSERT_TRUE(std::isfinite(got)) << what << " element " << i;
              ASSERT_LE(std::fabs(got - exact[i]), bound[i] * 127.0 / 126.0) << what << " element " << i;
            }
          }
        }
      }
      // The unquantized ring too.
      AllReduceOptions o;
      o.algorithm = Algorithm::kRing;
      auto out = Reduce(in, o, false);
      auto exact = ExactSum(in);
      for (size_t i = 0; i < count; ++i) {
        if (!std::isfinite(exact[i])) {
          ASSERT_TRUE(std::isnan(exact[i]) ? std::isnan(out[0].Get(i)) : out[0].Get(i) == exact[i]);
        }
      }
    }
}

TEST(WireBytes, TransportCountsWhatThePlanPredicts) {
  const size_t count = 1 << 20;
  for (int n : {2, 3, 8}) {
    auto in = MakeInputs(n, count, DType::kBFloat16, 1);
    AllReduceOptions ring, q, d;
    ring.algorithm = Algorithm::kRing;
    q.algorithm = d.algorithm = Algorithm::kFullBidir;
    q.block = 128;
    q.scale = ScaleFormat::kF32;
    q.validate = d.validate = false;  // count the collective's own bytes only
    ring.validate = false;
    uint64_t sent_ring = 0, sent_q = 0;
    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(CreateInProcessGroup(n, &comms).ok());
    auto out = in;
    tools::RunOnRanks(comms, [&](Communicator& c) {
      auto r = size_t(c.rank());
      return c.AllReduce(in[r].data(), out[r].data(), count, DType::kBFloat16, ring);
    });
    sent_ring = comms[0]->stats().bytes_sent;
    tools::RunOnRanks(comms, [&](Communicator& c) {
      auto r = size_t(c.rank());
      return c.AllReduce(in[r].data(), out[r].data(), count, DType::kBFloat16, q);
    });
    sent_q = comms[0]->stats().bytes_sent - sent_ring;
    tools::RunOnRanks(comms, [&](Communicator& c) {
      auto r = size_t(c.rank());
      return c.AllReduce(in[r].data(), out[r].data(), count, DType::kBFloat16, d);
    });
    const uint64_t sent_d = comms[0]->stats().bytes_sent - sent_ring - sent_q;
    EXPECT_EQ(sent_ring, Communicator::WireBytesPerRank(count, DType::kBFloat16, n, ring));
    EXPECT_EQ(sent_q, Communicator::WireBytesPerRank(count, DType::kBFloat16, n, q));
    EXPECT_EQ(sent_d, Communicator::WireBytesPerRank(count, DType::kBFloat16, n, d));
    // bf16 ring: 2(N-1)/N * 2 bytes per element; int8/B=128: (1 + 4/128) bytes per element;
    // int8 at the default block and scale (128, two-level): (1 + 2/128 + 1/16).
    const double ideal_ring = 2.0 * (n - 1) / n * count * 2;
    EXPECT_NEAR(double(sent_ring) / ideal_ring, 1.0, 0.01);
    EXPECT_NEAR(double(sent_ring) / double(sent_q), 2.0 / (1.0 + 4.0 / 128), 0.01);
    EXPECT_NEAR(double(sent_ring) / double(sent_d), 2.0 / (1.0 + 2.0 / 128 + 1.0 / 16), 0.01);
  }
}

TEST(Threshold, SmallMessagesUseTheUnquantizedRing) {
  auto in = MakeInputs(4, 1000, DType::kFloat32, 3, /*integers=*/true);
  AllReduceOptions o;
  o.algorithm = Algorithm::kFull;
  o.quantize_min_bytes = 1 << 20;
  auto out = Reduce(in, o, false);
  auto exact = ExactSum(in);
  for (size_t i = 0; i < exact.size(); ++i) ASSERT_EQ(out[0].Get(i), exact[i]);
  EXPECT_EQ(Communicator::WireBytesPerRank(1000, DType::kFloat32, 4, o),
            Communicator::WireBytesPerRank(1000, DType::kFloat32, 4, AllReduceOptions{Algorithm::kRing}));
}

}  // namespace
}  // namespace equarx::testing

namespace equarx::testing {
namespace {

TEST(Quantized, AboutAMillionElementsOnEightRanks) {
  const size_t count = (1 << 20) + 17;
  auto in = MakeInputs(8, count, DType::kBFloat16, 77);
  auto exact = ExactSum(in);
  for (const Config& c : kQuantized) {
    AllReduceOptions o;
    o.algorithm = c.algo;
    o.phases = c.phases;
    auto out = Reduce(in, o, c.algo == Algorithm::kSemi);
    ExpectIdentical(out, Name(c));
    auto bound = ErrorBound(in, o, DType::kBFloat16);
    for (size_t i = 0; i < count; ++i)
      ASSERT_LE(std::fabs(out[0].Get(i) - exact[i]), bound[i]) << Name(c) << " element " << i;
  }
}

// The whole collective gives the same bits whichever SIMD target the kernels run on.
TEST(Determinism, SameBitsOnEverySimdTarget) {
  auto in = MakeInputs(5, 77777, DType::kBFloat16, 8);
  in[2].Set(500, INFINITY);
  in[3].Set(9000, NAN);
  for (const Config& c : kQuantized) {
    AllReduceOptions o;
    o.algorithm = c.algo;
    o.phases = c.phases;
    ExpectSameBitsOnEverySimdTarget([&] { return Reduce(in, o, false); }, Name(c));
  }
}

}  // namespace
}  // namespace equarx::testing
