// The in-process transport beyond the transport contract (which Transports/Contract.* in
// stream_transport_test.cc runs on it): its sends wait for their receive (rendezvous), so a
// send still pending is withdrawn by Cancel, and a receive cancelled after its deadline no
// longer takes a late send.
#include "transport/inproc/inproc_transport.h"

#include <gtest/gtest.h>

namespace equarx::transport {
namespace {

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

TEST(Inproc, CancelWithdrawsAPendingSendOrReceive) {
  auto f = CreateInprocFabric(2);
  auto a = CreateInprocTransport(f, 0), b = CreateInprocTransport(f, 1);
  int x = 1, y = 0;
  Request r;
  ASSERT_TRUE(b->Irecv(0, 3, &y, sizeof y, &r).ok());
  EXPECT_EQ(b->Wait(&r, In(50)).code(), StatusCode::kTimeout);
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
  // Cancelling a send no receive has matched yet withdraws it: a receive posted later gets
  // nothing.
  Request s3, r3;
  ASSERT_TRUE(a->Isend(1, 4, &x, sizeof x, &s3).ok());
  a->Cancel(&s3);
  ASSERT_TRUE(b->Irecv(0, 4, &y, sizeof y, &r3).ok());
  EXPECT_EQ(b->Wait(&r3, In(30)).code(), StatusCode::kTimeout);
  b->Cancel(&r3);
}

}  // namespace
}  // namespace equarx::transport
