// The in-process transport: matching by (source, tag) in order, length errors, deadlines,
// cancellation, byte counts.
#include "transport/inproc/inproc_transport.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace equarx::transport {
namespace {

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

TEST(Inproc, SendBeforeAndAfterReceiveIsPosted) {
  auto f = CreateInprocFabric(2);
  auto a = CreateInprocTransport(f, 0), b = CreateInprocTransport(f, 1);
  int x = 7, y = 0, z = 9, w = 0;
  Request s1, r1, s2, r2;
  ASSERT_TRUE(a->Isend(1, 5, &x, sizeof x, &s1).ok());      // send first
  ASSERT_TRUE(b->Irecv(0, 5, &y, sizeof y, &r1).ok());
  ASSERT_TRUE(b->Irecv(0, 6, &w, sizeof w, &r2).ok());      // receive first
  ASSERT_TRUE(a->Isend(1, 6, &z, sizeof z, &s2).ok());
  for (Request* r : {&s1, &s2}) ASSERT_TRUE(a->Wait(r, In(1000)).ok());
  for (Request* r : {&r1, &r2}) ASSERT_TRUE(b->Wait(r, In(1000)).ok());
  EXPECT_EQ(y, 7);
  EXPECT_EQ(w, 9);
  EXPECT_EQ(a->bytes_sent(), 2 * sizeof(int));
  EXPECT_EQ(b->bytes_sent(), 0u);
}

TEST(Inproc, SameTagMatchesInPostingOrderAndTagsDoNotCross) {
  auto f = CreateInprocFabric(2);
  auto a = CreateInprocTransport(f, 0), b = CreateInprocTransport(f, 1);
  int v[3] = {1, 2, 3}, got[3] = {0, 0, 0}, other = 0;
  Request s[3], r[3], ro;
  ASSERT_TRUE(b->Irecv(0, 99, &other, sizeof other, &ro).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->Isend(1, 1, &v[i], sizeof(int), &s[i]).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b->Irecv(0, 1, &got[i], sizeof(int), &r[i]).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b->Wait(&r[i], In(1000)).ok());
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(got[2], 3);
  Status st;
  EXPECT_FALSE(b->Test(&ro, &st));  // tag 99 never sent
  b->Cancel(&ro);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->Wait(&s[i], In(1000)).ok());
}

TEST(Inproc, LengthMismatchIsAnError) {
  auto f = CreateInprocFabric(2);
  auto a = CreateInprocTransport(f, 0), b = CreateInprocTransport(f, 1);
  char big[16] = {}, small[8];
  Request s, r;
  ASSERT_TRUE(b->Irecv(0, 1, small, sizeof small, &r).ok());
  ASSERT_TRUE(a->Isend(1, 1, big, sizeof big, &s).ok());
  Status st = b->Wait(&r, In(1000));
  EXPECT_EQ(st.code(), StatusCode::kMismatch);
  EXPECT_NE(st.message().find("16 bytes sent, 8 expected"), std::string::npos) << st.ToString();
}

TEST(Inproc, WaitTimesOutAndCancelReleasesTheBuffer) {
  auto f = CreateInprocFabric(2);
  auto a = CreateInprocTransport(f, 0), b = CreateInprocTransport(f, 1);
  int x = 1, y = 0;
  Request r;
  ASSERT_TRUE(b->Irecv(0, 3, &y, sizeof y, &r).ok());
  const auto t0 = Clock::now();
  Status st = b->Wait(&r, In(50));
  EXPECT_EQ(st.code(), StatusCode::kTimeout);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(45));
  b->Cancel(&r);
  // A late send no longer lands in the cancelled buffer: it waits for a new receive.
  Request s, r2;
  int z = 0;
  ASSERT_TRUE(a->Isend(1, 3, &x, sizeof x, &s).ok());
  EXPECT_EQ(y, 0);
  ASSERT_TRUE(b->Irecv(0, 3, &z, sizeof z, &r2).ok());
  ASSERT_TRUE(b->Wait(&r2, In(1000)).ok());
  EXPECT_EQ(z, 1);
  ASSERT_TRUE(a->Wait(&s, In(1000)).ok());
  // Cancelling a pending send withdraws it.
  Request s3;
  ASSERT_TRUE(a->Isend(1, 4, &x, sizeof x, &s3).ok());
  a->Cancel(&s3);
  Request r3;
  ASSERT_TRUE(b->Irecv(0, 4, &y, sizeof y, &r3).ok());
  EXPECT_EQ(b->Wait(&r3, In(30)).code(), StatusCode::kTimeout);
  b->Cancel(&r3);
}

TEST(Inproc, PeerOutOfRange) {
  auto f = CreateInprocFabric(2);
  auto a = CreateInprocTransport(f, 0);
  int x;
  Request r;
  EXPECT_EQ(a->Isend(2, 0, &x, 4, &r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->Irecv(-1, 0, &x, 4, &r).code(), StatusCode::kInvalidArgument);
}

TEST(Inproc, ManyThreadsManyMessages) {
  const int n = 6, msgs = 200;
  auto f = CreateInprocFabric(n);
  std::vector<std::thread> th;
  std::vector<int> ok(n, 0);
  for (int r = 0; r < n; ++r)
    th.emplace_back([&, r] {
      auto t = CreateInprocTransport(f, r);
      std::vector<Request> sreq(msgs), rreq(msgs);
      std::vector<int> out(msgs), in(msgs, -1);
      for (int i = 0; i < msgs; ++i) {
        out[i] = r * 1000 + i;
        (void)t->Irecv((r + n - 1) % n, uint64_t(i), &in[i], sizeof(int), &rreq[i]);
        (void)t->Isend((r + 1) % n, uint64_t(i), &out[i], sizeof(int), &sreq[i]);
      }
      bool good = true;
      for (int i = 0; i < msgs; ++i) {
        good &= t->Wait(&rreq[i], In(5000)).ok() && in[i] == ((r + n - 1) % n) * 1000 + i;
        good &= t->Wait(&sreq[i], In(5000)).ok();
      }
      ok[r] = good;
    });
  for (auto& t : th) t.join();
  for (int r = 0; r < n; ++r) EXPECT_TRUE(ok[r]) << "rank " << r;
}

}  // namespace
}  // namespace equarx::transport
