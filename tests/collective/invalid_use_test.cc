// Invalid use: every case returns a clear error status on every rank — no crash, no hang.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

constexpr size_t kCount = 4096;

// Runs an AllReduce where rank `bad` gets its arguments changed by `spoil`.
std::vector<Status> RunWithOneBadRank(int n, int bad,
                                      const std::function<void(const void**, void**, size_t*, DType*,
                                                               AllReduceOptions*)>& spoil) {
  auto in = MakeInputs(n, kCount, DType::kFloat32, 1);
  auto out = in;
  return RunRanks(n, [&](Communicator& c) {
    const void* send = in[size_t(c.rank())].data();
    void* recv = out[size_t(c.rank())].data();
    size_t count = kCount;
    DType dtype = DType::kFloat32;
    AllReduceOptions o;
    o.timeout_ms = 20000;
    if (c.rank() == bad) spoil(&send, &recv, &count, &dtype, &o);
    return c.AllReduce(send, recv, count, dtype, o);
  });
}

void ExpectAll(const std::vector<Status>& st, StatusCode code, const std::string& needle) {
  for (size_t r = 0; r < st.size(); ++r) {
    EXPECT_EQ(st[r].code(), code) << "rank " << r << ": " << st[r].ToString();
    EXPECT_NE(st[r].message().find(needle), std::string::npos) << "rank " << r << ": " << st[r].ToString();
  }
}

TEST(InvalidUse, NullBuffersFailOnEveryRank) {
  for (int n : {1, 2, 5}) {
    auto st = RunWithOneBadRank(n, n - 1, [](const void** s, void**, size_t*, DType*, AllReduceOptions*) { *s = nullptr; });
    ExpectAll(st, StatusCode::kInvalidArgument, "send buffer is null");
    st = RunWithOneBadRank(n, 0, [](const void**, void** r, size_t*, DType*, AllReduceOptions*) { *r = nullptr; });
    ExpectAll(st, StatusCode::kInvalidArgument, "recv buffer is null");
  }
}

TEST(InvalidUse, NamesTheOffendingRank) {
  auto st = RunWithOneBadRank(4, 2, [](const void** s, void**, size_t*, DType*, AllReduceOptions*) { *s = nullptr; });
  EXPECT_NE(st[0].message().find("rank 2"), std::string::npos) << st[0].ToString();
}

TEST(InvalidUse, BlockOutOfRange) {
  for (size_t block : {1, 15, 4097, 1 << 20}) {  // (0 is the default: 128 or 64 by the scale)
    auto st = RunWithOneBadRank(3, 1, [&](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->block = block; });
    ExpectAll(st, StatusCode::kInvalidArgument, "block " + std::to_string(block) + " is out of range");
  }
}

TEST(InvalidUse, UnsupportedDtypeAndEnums) {
  auto st = RunWithOneBadRank(3, 0, [](const void**, void**, size_t*, DType* d, AllReduceOptions*) { *d = DType(9); });
  ExpectAll(st, StatusCode::kInvalidArgument, "dtype");
  st = RunWithOneBadRank(3, 2, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->algorithm = Algorithm(77); });
  ExpectAll(st, StatusCode::kInvalidArgument, "algorithm");
  st = RunWithOneBadRank(3, 2, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->phases = Phases(0); });
  ExpectAll(st, StatusCode::kInvalidArgument, "phases");
  st = RunWithOneBadRank(2, 1, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->codec = Codec(17); });
  ExpectAll(st, StatusCode::kInvalidArgument, "codec");
  st = RunWithOneBadRank(2, 1, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->microshards = 65; });
  ExpectAll(st, StatusCode::kInvalidArgument, "microshards");
}

TEST(InvalidUse, OverlappingBuffers) {
  std::vector<float> buf(2 * kCount);
  auto st = RunWithOneBadRank(2, 0, [&](const void** s, void** r, size_t*, DType*, AllReduceOptions*) {
    *s = buf.data();
    *r = buf.data() + 1;
  });
  ExpectAll(st, StatusCode::kInvalidArgument, "overlap");
}

TEST(Mismatch, CountsDtypesAndOptionsThatDifferBetweenRanks) {
  auto st = RunWithOneBadRank(4, 3, [](const void**, void**, size_t* c, DType*, AllReduceOptions*) { *c = kCount - 1; });
  ExpectAll(st, StatusCode::kMismatch, "count");
  st = RunWithOneBadRank(4, 1, [](const void**, void**, size_t*, DType* d, AllReduceOptions*) { *d = DType::kBFloat16; });
  ExpectAll(st, StatusCode::kMismatch, "dtype");
  st = RunWithOneBadRank(3, 1, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->algorithm = Algorithm::kSemi; });
  ExpectAll(st, StatusCode::kMismatch, "algorithm");
  st = RunWithOneBadRank(3, 2, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->phases = Phases::kAG; });
  ExpectAll(st, StatusCode::kMismatch, "phases");
  st = RunWithOneBadRank(3, 2, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->block = 256; });
  ExpectAll(st, StatusCode::kMismatch, "block");
  st = RunWithOneBadRank(3, 0, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->microshards = 2; });
  ExpectAll(st, StatusCode::kMismatch, "microshards");
  st = RunWithOneBadRank(3, 0, [](const void**, void**, size_t*, DType*, AllReduceOptions* o) { o->quantize_min_bytes = 1; });
  ExpectAll(st, StatusCode::kMismatch, "quantize_min_bytes");
}

// A group of 2^K ranks across hosts checks a call in K steps of one frame to one partner
// (CheckTree), and recursive_doubling's steps ride in them; on one host it exchanges
// descriptors, and recursive_doubling runs after. A mismatch on any rank, whatever plan that
// rank resolved (recursive_doubling with another count, the ring, another dtype), fails on
// every rank with the descriptor exchange's message either way; every message of the refused
// call is consumed, so the next call on the same group is right (exact, on integer inputs).
TEST(Mismatch, PowerOfTwoGroupsRefuseInTheirStepsAndStayUsable) {
  using Spoil = std::function<void(size_t*, DType*, AllReduceOptions*)>;
  const std::vector<std::pair<std::string, Spoil>> spoils = {
      {"count", [](size_t* c, DType*, AllReduceOptions*) { *c = kCount - 1; }},
      {"count", [](size_t* c, DType*, AllReduceOptions*) { *c = 0; }},
      {"dtype", [](size_t*, DType* d, AllReduceOptions*) { *d = DType::kBFloat16; }},
      {"algorithm", [](size_t*, DType*, AllReduceOptions* o) { o->algorithm = Algorithm::kRing; }},
      {"algorithm", [](size_t*, DType*, AllReduceOptions* o) { o->algorithm = Algorithm::kOneShot; }},
  };
  for (int n : {2, 4, 8})
  for (int ranks_per_host : {1, n})
    for (int bad : {0, n - 1, n / 2})
      for (const auto& needle_and_spoil : spoils) {
        const std::string& needle = needle_and_spoil.first;
        const Spoil& spoil = needle_and_spoil.second;
        std::vector<std::unique_ptr<Communicator>> comms;
        ASSERT_TRUE(CreateInProcessGroupOnHosts(n, ranks_per_host, &comms).ok());
        auto in = MakeInputs(n, kCount, DType::kFloat32, 5, /*integers=*/true);
        auto out = in;
        const std::string what = "n=" + std::to_string(n) + " ranks per host " + std::to_string(ranks_per_host) +
                                 " bad=" + std::to_string(bad) + " " + needle;
        auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
          size_t count = kCount;
          DType dtype = DType::kFloat32;
          AllReduceOptions o;
          o.algorithm = Algorithm::kRecursiveDoubling;
          o.timeout_ms = 20000;
          if (c.rank() == bad) spoil(&count, &dtype, &o);
          return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), count, dtype, o);
        });
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(st[size_t(r)].code(), StatusCode::kMismatch) << what << " rank " << r << ": " << st[size_t(r)].ToString();
          EXPECT_NE(st[size_t(r)].message().find(needle), std::string::npos) << what << ": " << st[size_t(r)].ToString();
        }
        st = tools::RunOnRanks(comms, [&](Communicator& c) {
          AllReduceOptions o;
          o.algorithm = Algorithm::kRecursiveDoubling;
          return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), kCount, DType::kFloat32, o);
        });
        const auto exact = ExactSum(in);
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(st[size_t(r)].ok()) << what << " (the next call) rank " << r << ": " << st[size_t(r)].ToString();
          size_t wrong = 0;
          for (size_t i = 0; i < kCount; ++i) wrong += out[size_t(r)].Get(i) != exact[i];
          EXPECT_EQ(wrong, 0u) << what << " (the next call) rank " << r;
        }
      }
}

TEST(Mismatch, ZeroCountOnOneRankIsAMismatchNotAHang) {
  auto st = RunWithOneBadRank(3, 1, [](const void**, void**, size_t* c, DType*, AllReduceOptions*) { *c = 0; });
  ExpectAll(st, StatusCode::kMismatch, "count");
}

TEST(Deadline, ARankThatNeverArrivesTimesOutTheOthers) {
  auto in = MakeInputs(3, kCount, DType::kFloat32, 1);
  auto out = in;
  // absent: the rank that never calls; validate: with or without the argument check.
  auto run = [&](std::vector<std::unique_ptr<Communicator>>& comms, int absent, bool validate) {
    return tools::RunOnRanks(comms, [&](Communicator& c) {
      if (c.rank() == absent) return Status::Ok();
      AllReduceOptions o;
      o.timeout_ms = 300;
      o.validate = validate;
      return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), kCount, DType::kFloat32, o);
    });
  };
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(CreateInProcessGroup(3, &comms).ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto st = run(comms, 2, true);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st[0].code(), StatusCode::kTimeout) << st[0].ToString();
  EXPECT_EQ(st[1].code(), StatusCode::kTimeout) << st[1].ToString();
  EXPECT_LT(secs, 5.0);
  // Without validation the collective itself times out too.
  std::vector<std::unique_ptr<Communicator>> fresh;
  ASSERT_TRUE(CreateInProcessGroup(3, &fresh).ok());
  auto st2 = run(fresh, 0, false);
  EXPECT_EQ(st2[1].code(), StatusCode::kTimeout) << st2[1].ToString();
  EXPECT_EQ(st2[2].code(), StatusCode::kTimeout) << st2[2].ToString();
}

TEST(Deadline, ACommunicatorThatTimedOutSaysSoAtOnceOnEveryLaterCall) {
  // Before: the ranks fell out of step for good (rank 2 one call behind), so every later call
  // waited out its whole deadline and blamed a rank that was there.
  auto in = MakeInputs(3, kCount, DType::kFloat32, 1);
  auto out = in;
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(CreateInProcessGroup(3, &comms).ok());
  for (int call = 0; call < 3; ++call) {
    double ms[3] = {};
    auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
      if (call == 0 && c.rank() == 2) return Status::Ok();  // late for the first call only
      AllReduceOptions o;
      o.timeout_ms = 300;
      const auto t0 = std::chrono::steady_clock::now();
      Status s = c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), kCount, DType::kFloat32, o);
      ms[c.rank()] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return s;
    });
    for (int r : {0, 1}) {
      EXPECT_EQ(st[size_t(r)].code(), StatusCode::kTimeout) << st[size_t(r)].ToString();
      const bool sticky = st[size_t(r)].message().find("this communicator is unusable: call 1 failed (timeout: "
                                                       "argument check: receive from rank 2") != std::string::npos;
      EXPECT_EQ(sticky, call > 0) << "call " << call << ", rank " << r << ": " << st[size_t(r)].ToString();
      if (call > 0) {
        EXPECT_LT(ms[r], 50.0) << "call " << call << " on rank " << r << " waited for its deadline";
      }
    }
  }
  EXPECT_EQ(comms[0]->stats().calls, 1u);
  EXPECT_NE(comms[0]->failure().message().find("call 1 failed"), std::string::npos);
  // Rank 2's first call found the others refusing: it timed out, and its communicator failed too.
  EXPECT_NE(comms[2]->failure().message().find("call 1 failed (timeout"), std::string::npos)
      << comms[2]->failure().ToString();
}

TEST(Mismatch, AnArgumentErrorLeavesTheCommunicatorUsable) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(CreateInProcessGroup(3, &comms).ok());
  auto in = MakeInputs(3, kCount, DType::kFloat32, 1);
  auto out = in;
  for (bool spoil : {true, false}) {
    auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
      const size_t count = spoil && c.rank() == 1 ? kCount - 1 : kCount;
      return c.AllReduce(in[size_t(c.rank())].data(), out[size_t(c.rank())].data(), count, DType::kFloat32);
    });
    for (const Status& s : st) EXPECT_EQ(s.code(), spoil ? StatusCode::kMismatch : StatusCode::kOk) << s.ToString();
  }
}

// one_shot sends its data beside the argument check instead of after it. A refused call must
// still fail on every rank with the check's message, whichever ranks sent data ahead (those
// that run one_shot with valid arguments) and whichever did not, and what they sent must be
// taken in: the next calls on the same group give the right result.
TEST(Mismatch, OneShotDataSentAheadOfARefusedCallIsDrained) {
  using Spoil = std::function<void(const void**, size_t*, DType*, AllReduceOptions*)>;
  const std::vector<std::tuple<int, Spoil, StatusCode, std::string>> cases = {
      {1, [](const void**, size_t* c, DType*, AllReduceOptions*) { *c = kCount - 1; }, StatusCode::kMismatch, "count"},
      {2, [](const void**, size_t*, DType*, AllReduceOptions* o) { o->algorithm = Algorithm::kRing; },
       StatusCode::kMismatch, "algorithm"},
      {0, [](const void**, size_t*, DType*, AllReduceOptions* o) { o->block = 7; }, StatusCode::kInvalidArgument,
       "block 7"},
      {1, [](const void**, size_t*, DType* d, AllReduceOptions*) { *d = DType::kBFloat16; }, StatusCode::kMismatch,
       "dtype"},
      {2, [](const void** s, size_t*, DType*, AllReduceOptions*) { *s = nullptr; }, StatusCode::kInvalidArgument,
       "send buffer is null"},
      {0, [](const void**, size_t*, DType*, AllReduceOptions* o) {  // the other one_shot
         o->algorithm = o->algorithm == Algorithm::kOneShot ? Algorithm::kOneShotRaw : Algorithm::kOneShot;
       }, StatusCode::kMismatch, "algorithm"},
      {1, [](const void**, size_t* c, DType*, AllReduceOptions*) { *c = 0; }, StatusCode::kMismatch, "count"},
  };
  for (Algorithm a : {Algorithm::kOneShot, Algorithm::kOneShotRaw}) {
    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(CreateInProcessGroup(3, &comms).ok());
    auto in = MakeInputs(3, kCount, DType::kFloat32, 5, /*integers=*/true);
    const auto exact = ExactSum(in);
    for (const auto& c_case : cases)
      for (bool spoiled : {true, false}) {
        // Named copies, not a structured binding: a lambda may not capture one (clang 14).
        const int bad = std::get<0>(c_case);
        const Spoil& spoil = std::get<1>(c_case);
        const StatusCode code = std::get<2>(c_case);
        const std::string& needle = std::get<3>(c_case);
        auto out = in;
        auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
          const void* send = in[size_t(c.rank())].data();
          size_t count = kCount;
          DType dtype = DType::kFloat32;
          AllReduceOptions o;
          o.algorithm = a;
          o.timeout_ms = 20000;
          if (spoiled && c.rank() == bad) spoil(&send, &count, &dtype, &o);
          return c.AllReduce(send, out[size_t(c.rank())].data(), count, dtype, o);
        });
        const std::string what = std::string(AlgorithmName(a)) + " " + needle + (spoiled ? "" : ", then a good call");
        if (spoiled) {
          ExpectAll(st, code, needle);
          continue;
        }
        for (const Status& s : st) ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
        for (int r = 1; r < 3; ++r) ASSERT_TRUE(out[size_t(r)] == out[0]) << what;
        if (a == Algorithm::kOneShotRaw)  // integers: exact
          for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[0].Get(i), exact[i]) << what << " element " << i;
      }
    for (const auto& c : comms) EXPECT_TRUE(c->failure().ok()) << c->failure().ToString();
  }
}

TEST(InvalidUse, GroupSizeOutOfRange) {
  std::vector<std::unique_ptr<Communicator>> comms;
  EXPECT_EQ(CreateInProcessGroup(0, &comms).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateInProcessGroup(-3, &comms).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateInProcessGroup(2, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace equarx::testing
