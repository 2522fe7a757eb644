// The tune table behind algorithm=auto: parsing (with clear errors), lookup, hashing, and
// auto choosing exactly what its table says.
#include "algo/tune_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

using algo::TuneTable;

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
    auto run = [&](AllReduceOptions o) {
      auto out = in;
      auto st = RunRanks(4, [&](Communicator& c) {
        return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), count, DType::kBFloat16, o);
      });
      for (auto& s : st) EXPECT_TRUE(s.ok()) << s.ToString();
      for (auto& b : out) EXPECT_TRUE(b == out[0]);
      return out[0];
    };
    AllReduceOptions a;
    a.algorithm = Algorithm::kAuto;
    a.tune_file = path;
    AllReduceOptions pinned;
    pinned.algorithm = count < 32768 ? Algorithm::kRing : count < 524288 ? Algorithm::kSemi : Algorithm::kTwoShot;
    pinned.phases = count < 524288 ? Phases::kRSAG : Phases::kRS;
    EXPECT_TRUE(run(a) == run(pinned)) << count;
  }
  std::remove(path);
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

}  // namespace
}  // namespace equarx::testing
