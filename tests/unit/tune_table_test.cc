// The tune table behind algorithm=auto: parsing (with clear errors), lookup, hashing, and
// auto choosing exactly what its table says.
#include "algo/tune_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "algo/cost_model.h"
#include "algo/resolve.h"
#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

using algo::TuneTable;

// One AllReduce of `in` on a new group of its ranks, every rank succeeding (ReduceAll) and
// agreeing bit for bit: rank 0's output.
Buffer Agreed(const std::vector<Buffer>& in, const AllReduceOptions& o) {
  const std::vector<Buffer> out = ReduceAll(in, o, false);
  for (const Buffer& b : out) EXPECT_TRUE(b == out[0]);
  return out[0];
}

const char* kTable =
    "equarx-tune 1   # measured\n"
    "section ranks=4 dtype=bf16\n"
    "rule 0 ring rs+ag\n"
    "rule 65536 semi rs+ag\n"
    "rule 1048576 two_shot rs\n";

TEST(TuneTable, ParsesAndLooksUpBySize) {
  TuneTable t;
  ASSERT_TRUE(TuneTable::Parse(kTable, &t).ok());
  EXPECT_EQ(t.Lookup(4, DType::kBFloat16, 100).algorithm, Algorithm::kRing);
  EXPECT_EQ(t.Lookup(4, DType::kBFloat16, 65536).algorithm, Algorithm::kSemi);
  EXPECT_EQ(t.Lookup(4, DType::kBFloat16, 1 << 30).algorithm, Algorithm::kTwoShot);
  EXPECT_EQ(t.Lookup(4, DType::kBFloat16, 1 << 30).phases, Phases::kRS);
  // No section for 8 ranks: the built-in defaults.
  const TuneTable d = TuneTable::Defaults();
  EXPECT_EQ(t.Lookup(8, DType::kBFloat16, 1 << 30).algorithm, d.Lookup(8, DType::kBFloat16, 1 << 30).algorithm);
  TuneTable again;
  ASSERT_TRUE(TuneTable::Parse(t.ToText(), &again).ok());
  EXPECT_EQ(again.Hash(), t.Hash());
  EXPECT_NE(t.Hash(), d.Hash());
}

TEST(TuneTable, MalformedTablesNameTheLine) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "empty"},
      {"equarx-tune 2\n", "line 1"},
      {"equarx-tune 1\nrule 0 ring rs+ag\n", "rule before any section"},
      {"equarx-tune 1\nsection ranks=0 dtype=bf16\n", "bad ranks"},
      {"equarx-tune 1\nsection ranks=4 dtype=f64\n", "bad dtype"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\nrule 5 ring rs+ag\n", "start at 0"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\nrule 0 ring rs+ag\nrule 0 semi rs\n", "grow strictly"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\nrule 0 warp rs+ag\n", "bad algorithm"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\nrule 0 auto rs+ag\n", "bad algorithm"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\nrule 0 ring sideways\n", "bad phases"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\nrule -1 ring rs+ag\n", "bad size"},
      {"equarx-tune 1\nsection ranks=4 dtype=bf16\n", "no rules"},
      {"equarx-tune 1\nbogus\n", "unknown item"},
  };
  for (const auto& [text, needle] : bad) {
    TuneTable t;
    Status st = TuneTable::Parse(text, &t);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
  }
  TuneTable t;
  EXPECT_NE(TuneTable::Load("/nonexistent/equarx.tune", &t).message().find("cannot read"), std::string::npos);
}

// auto gives bit for bit what the algorithm its table names gives, on every rank.
TEST(Auto, FollowsItsTableExactly) {
  char path[] = "/tmp/equarx-tune-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  { std::ofstream(path) << kTable; }
  for (size_t count : {1000, 40000, 600000}) {  // bf16: 2 KB (ring), 80 KB (semi), 1.2 MB (two_shot rs)
    auto in = MakeInputs(4, count, DType::kBFloat16, count);
    AllReduceOptions a;
    a.algorithm = Algorithm::kAuto;
    a.tune_file = path;
    AllReduceOptions pinned;
    pinned.algorithm = count < 32768 ? Algorithm::kRing : count < 524288 ? Algorithm::kSemi : Algorithm::kTwoShot;
    pinned.phases = count < 524288 ? Phases::kRSAG : Phases::kRS;
    EXPECT_TRUE(Agreed(in, a) == Agreed(in, pinned)) << count;
  }
  std::remove(path);
}

// Without a tune file auto asks the cost model. At every size of its sweep the table's choice
// is the model's fastest: the fastest unquantized schedule unless a quantized candidate beats
// it by 5%, else the fastest quantized candidate.
TEST(ModelTable, EverySizePicksTheModelsFastest) {
  const Algorithm plain[] = {Algorithm::kRing, Algorithm::kOneShotRaw, Algorithm::kRecursiveDoubling};
  const Algorithm quantized[] = {Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kSemi, Algorithm::kFull,
                                 Algorithm::kOneShot};
  int plain_rules = 0, quantized_rules = 0;
  for (int n : {2, 4, 8, 64})
    for (double link : {1.0, 25.0, 100.0})
      for (DType dtype : {DType::kBFloat16, DType::kFloat32}) {
        AllReduceOptions o;
        o.algorithm = Algorithm::kAuto;
        o.microshards = 4;
        const TuneTable t = algo::ModelTuneTable(o, dtype, n, {link, 30, 25});
        ASSERT_EQ(t.sections.size(), 1u);
        const auto& rules = t.sections[0].rules;
        ASSERT_FALSE(rules.empty());
        EXPECT_EQ(rules[0].min_bytes, 0u);
        for (size_t i = 1; i < rules.size(); ++i) {
          EXPECT_GT(rules[i].min_bytes, rules[i - 1].min_bytes);
          EXPECT_NE(rules[i].algorithm, rules[i - 1].algorithm);  // a rule where the choice changes
        }
        algo::Machine m;
        m.hosts = n;
        m.link_bytes_per_s = link * 1e9 / 8;
        m.alpha_s = 30e-6;
        m.per_message_s = 25e-6;
        m.check_bytes = algo::kCheckBytes;
        for (size_t bytes = 16; bytes <= (size_t(1) << 34); bytes *= 2) {
          const size_t count = bytes / DTypeSize(dtype);
          const std::string where = std::to_string(n) + " ranks, " + std::to_string(link) + " Gbit/s, " +
                                    std::to_string(bytes) + " B " + std::string(DTypeName(dtype));
          const algo::TuneRule rule = t.Lookup(n, dtype, bytes);
          EXPECT_EQ(rule.phases, Phases::kRSAG) << where;
          // The default rotation: int8's hadamard on the quantized plans, none on the others.
          AllReduceOptions c = o;
          auto fastest_of = [&](const auto& algorithms, Rotation rotation, Algorithm* best) {
            double fastest = 1e300;
            for (Algorithm a : algorithms) {
              c.algorithm = a;
              c.rotation = rotation;
              const double s = algo::PredictFlat(c, dtype, count, m, t).seconds;
              if (s < fastest) fastest = s, *best = a;
            }
            return fastest;
          };
          Algorithm best_plain, best;
          const double unquantized = fastest_of(plain, Rotation::kNone, &best_plain);
          const double fastest = fastest_of(quantized, Rotation::kHadamard, &best);
          if (!IsQuantized(rule.algorithm)) {
            EXPECT_GE(fastest, 0.95 * unquantized) << where;
            c.algorithm = rule.algorithm;
            c.rotation = Rotation::kNone;
            EXPECT_EQ(algo::PredictFlat(c, dtype, count, m, t).seconds, unquantized)
                << where << ": " << AlgorithmName(rule.algorithm) << " vs " << AlgorithmName(best_plain);
          } else {
            EXPECT_LT(fastest, 0.95 * unquantized) << where;
            c.rotation = Rotation::kHadamard;
            c.algorithm = rule.algorithm;
            EXPECT_EQ(algo::PredictFlat(c, dtype, count, m, t).seconds, fastest)
                << where << ": " << AlgorithmName(rule.algorithm) << " vs " << AlgorithmName(best);
          }
        }
        for (const auto& r : rules) (IsQuantized(r.algorithm) ? quantized_rules : plain_rules)++;
      }
  // Both kinds of choice occur over these networks (a table of one kind would pass the above
  // only if the model agreed everywhere).
  EXPECT_GT(plain_rules, 0);
  EXPECT_GT(quantized_rules, 0);
}

// With no latency of its own per step (EQUARX_STEP_US 0), full (a ring of 2(N-1) steps) and
// two_shot (2 steps) cost the model the same at 4 ranks: the same messages, bytes and codec
// work. The tie goes to two_shot's fewer steps.
TEST(ModelTable, ATieGoesToFewerSteps) {
  AllReduceOptions o;
  o.algorithm = Algorithm::kAuto;
  const size_t bytes = size_t(1) << 20, count = bytes / 4;
  const TuneTable t = algo::ModelTuneTable(o, DType::kFloat32, 4, {1, 0, 16});
  algo::Machine m;
  m.hosts = 4;
  m.link_bytes_per_s = 1e9 / 8;
  m.alpha_s = 0;
  m.per_message_s = 16e-6;
  m.check_bytes = algo::kCheckBytes;
  AllReduceOptions full = o, two_shot = o;
  full.algorithm = Algorithm::kFull;
  two_shot.algorithm = Algorithm::kTwoShot;
  const algo::Prediction pf = algo::PredictFlat(full, DType::kFloat32, count, m, t);
  const algo::Prediction pt = algo::PredictFlat(two_shot, DType::kFloat32, count, m, t);
  ASSERT_EQ(pf.seconds, pt.seconds);
  ASSERT_GT(pf.steps, pt.steps);
  EXPECT_EQ(t.Lookup(4, DType::kFloat32, bytes).algorithm, Algorithm::kTwoShot);
}

// The table depends only on ModelTableInputs: the same for options that differ elsewhere, a
// different one where an input differs; hierarchical adds the section its inner plans use.
TEST(ModelTable, DependsOnItsInputsOnly) {
  AllReduceOptions a;
  a.algorithm = Algorithm::kAuto;
  a = ResolveOptions(a);
  AllReduceOptions b = a;
  b.seed = 99;
  b.timeout_ms = 5;
  b.threads = 3;
  b.phases = Phases::kRS;
  const algo::AutoNetwork net{25, 20, 10};
  EXPECT_EQ(algo::ModelTuneTable(a, DType::kBFloat16, 8, net).Hash(),
            algo::ModelTuneTable(b, DType::kBFloat16, 8, net).Hash());
  EXPECT_EQ(algo::ModelTuneTable(a, DType::kBFloat16, 8, net).Hash(),
            algo::ModelTuneTable(algo::ModelTableInputs(a), DType::kBFloat16, 8, net).Hash());
  b = a;
  b.quantize_min_bytes = 1 << 20;  // the gate keeps every smaller message on the ring
  EXPECT_NE(algo::ModelTuneTable(a, DType::kBFloat16, 8, net).Hash(),
            algo::ModelTuneTable(b, DType::kBFloat16, 8, net).Hash());
  EXPECT_NE(algo::ModelTuneTable(a, DType::kBFloat16, 8, net).Hash(),
            algo::ModelTuneTable(a, DType::kBFloat16, 8, {100, 20, 10}).Hash());
  EXPECT_NE(algo::ModelTuneTable(a, DType::kBFloat16, 8, net).Hash(),
            algo::ModelTuneTable(a, DType::kBFloat16, 8, {25, 20, 40}).Hash());  // the message cost
  AllReduceOptions h = HierarchicalOptions(Algorithm::kAuto, 2);
  h = ResolveOptions(h);
  const TuneTable t = algo::ModelTuneTable(h, DType::kFloat32, 8, net);
  ASSERT_EQ(t.sections.size(), 2u);
  EXPECT_EQ(t.sections[0].ranks, 4);  // the 4 hosts of the inner plans
  EXPECT_EQ(t.sections[1].ranks, 8);
}

// A call with auto and no tune file runs, bit for bit, the algorithm the model's table names
// for the environment's network, on every rank. The four thread ranks count as four hosts
// (EQUARX_RANKS_PER_HOST=1), so that the call and the table see the same network.
TEST(Auto, FollowsTheCostModelWithoutATable) {
  ::unsetenv("EQUARX_TUNE_FILE");
  ::setenv("EQUARX_LINK_GBIT", "100", 1);
  ::setenv("EQUARX_RANKS_PER_HOST", "1", 1);
  AllReduceOptions asked;
  asked.algorithm = Algorithm::kAuto;
  const TuneTable table = algo::AutoTableOf(asked, DType::kFloat32, 4, env::Read());
  std::set<Algorithm> seen;
  for (size_t count : {size_t(1000), size_t(4000000)}) {  // 4 KB and 16 MB of f32
    const auto in = MakeInputs(4, count, DType::kFloat32, count);
    AllReduceOptions a;
    a.algorithm = Algorithm::kAuto;
    AllReduceOptions pinned;
    pinned.algorithm = table.Lookup(4, DType::kFloat32, count * 4).algorithm;
    seen.insert(pinned.algorithm);
    EXPECT_TRUE(Agreed(in, a) == Agreed(in, pinned)) << count << ": " << AlgorithmName(pinned.algorithm);
  }
  EXPECT_EQ(seen.size(), 2u);  // the two sizes take different algorithms on this network
  ::unsetenv("EQUARX_LINK_GBIT");
  ::unsetenv("EQUARX_RANKS_PER_HOST");
}

// Ranks whose tables for auto differ would run different schedules: the argument check refuses
// the call on every rank, for auto and for hierarchical's inner auto alike.
TEST(Auto, RanksWithDifferentTablesAreRefusedOnEveryRank) {
  char a[] = "/tmp/equarx-tune-XXXXXX", b[] = "/tmp/equarx-tune-XXXXXX";
  for (char* path : {a, b}) {
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  { std::ofstream(a) << kTable; }
  { std::ofstream(b) << "equarx-tune 1\nsection ranks=4 dtype=bf16\nrule 0 full rs+ag\n"; }
  const auto in = MakeInputs(4, 3000, DType::kBFloat16, 3);
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kHierarchical, Algorithm::kFull}) {
    auto out = in;
    auto st = RunRanks(4, [&](Communicator& c) {
      AllReduceOptions o = algorithm == Algorithm::kHierarchical ? HierarchicalOptions(Algorithm::kAuto, 2)
                                                                 : AllReduceOptions{};
      if (algorithm != Algorithm::kHierarchical) o.algorithm = algorithm;
      o.tune_file = c.rank() == 0 ? a : b;
      return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), 3000, DType::kBFloat16, o);
    });
    for (const Status& s : st) {
      if (algorithm == Algorithm::kFull) {  // no auto: the table is not looked at
        EXPECT_TRUE(s.ok()) << s.ToString();
      } else {
        EXPECT_EQ(s.code(), StatusCode::kMismatch) << AlgorithmName(algorithm);
        EXPECT_NE(s.message().find("a different table for auto"), std::string::npos) << s.ToString();
      }
    }
  }
  std::remove(a);
  std::remove(b);
}

TEST(Auto, ABrokenTableFailsAutoCallsOnEveryRankOnly) {
  char path[] = "/tmp/equarx-tune-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  { std::ofstream(path) << "equarx-tune 1\nsection ranks=3 dtype=f32\nrule 0 ring\n"; }
  auto in = MakeInputs(3, 5000, DType::kFloat32, 1);
  auto out = in;
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kFull}) {
    auto st = RunRanks(3, [&](Communicator& c) {
      AllReduceOptions o;
      o.algorithm = a;
      o.tune_file = path;
      return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), 5000, DType::kFloat32, o);
    });
    for (auto& s : st) {
      if (a == Algorithm::kAuto) {
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
        EXPECT_NE(s.message().find("line 3"), std::string::npos) << s.ToString();
      } else {
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    }
  }
  std::remove(path);
}

// Ranks on several hosts (a layout the data path found, or ranks_per_host given): auto may
// choose hierarchical itself, where the model predicts it fastest; a call that cannot run it
// (error feedback, which ranks need not agree on) is refused with a clear error. On 2 hosts x
// 2 ranks at 1 Gbit/s the model sends a 64 MiB call there (one bf16 contribution per host
// crosses the link instead of two), and keeps the smallest calls flat (recursive_doubling).
TEST(Auto, ChoosesHierarchicalOnSeveralHostsWhereTheModelSaysSo) {
  const env::Settings env;  // the knobs' defaults: 1 Gbit/s, 2 us a step, 14 us a message
  algo::AutoTables tables(env);
  AllReduceOptions o;  // auto
  for (size_t count : {size_t(256), size_t(32) << 20}) {
    algo::Resolved found, flat, with_residual;
    ASSERT_TRUE(algo::Resolve({o, DType::kBFloat16, count, 4, false, false, 2}, env, &tables, &found).ok());
    ASSERT_TRUE(algo::Resolve({o, DType::kBFloat16, count, 4, false, false, 1}, env, &tables, &flat).ok());
    const Status residual = algo::Resolve({o, DType::kBFloat16, count, 4, false, true, 2}, env, &tables, &with_residual);
    EXPECT_EQ(found.options.ranks_per_host, 2u);
    const algo::TuneRule rule = found.table->Lookup(4, DType::kBFloat16, count * 2);
    EXPECT_EQ(found.hierarchical, rule.algorithm == Algorithm::kHierarchical) << count;
    EXPECT_EQ(found.hierarchical, count > 256) << count;
    EXPECT_FALSE(flat.hierarchical) << count;
    if (!found.hierarchical) {
      EXPECT_TRUE(residual.ok()) << residual.ToString();
      continue;
    }
    EXPECT_EQ(residual.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(residual.message().find("auto chose hierarchical"), std::string::npos) << residual.ToString();
  }
}

// Every flat algorithm has its row in the registry (algo/algorithms.inc): a builder, and an
// unquantized twin that is unquantized and builds a plan of its own; auto and hierarchical,
// which resolve to flat plans, have none.
TEST(Registry, EveryFlatAlgorithmHasARow) {
  size_t n = 0;
  const EnumInfo* algos = AlgorithmTable(&n);
  for (size_t i = 0; i < n; ++i) {
    const Algorithm a = Algorithm(algos[i].id);
    const bool flat = a != Algorithm::kAuto && a != Algorithm::kHierarchical;
    EXPECT_EQ(algo::BuilderOf(a) != nullptr, flat) << algos[i].name;
    if (!flat) continue;
    const Algorithm twin = algo::UnquantizedTwin(a);
    EXPECT_FALSE(IsQuantized(twin)) << algos[i].name;
    EXPECT_NE(algo::BuilderOf(twin), nullptr) << algos[i].name;
    algo::PlanArgs args;
    args.count = 1000;
    args.ranks = 3;
    args.quantized = algo::QuantizedWire(Codec::kInt8, 64);
    const algo::Plan p = algo::BuilderOf(a)(args);
    EXPECT_STREQ(p.name, algos[i].name.data()) << "the row's builder builds its own algorithm";
  }
}

}  // namespace
}  // namespace equarx::testing
