// The socket transport's data loop against frames it cannot expect, over real TCP: a peer
// that passed the handshake (played by the test, which knows the secret) sends a header
// announcing more than the limit, with or without a receive posted: every request on that
// connection fails at once with a protocol error naming the peer. A message that no receive
// has claimed and that does not fit the per-peer budget stays in the kernel: memory does not
// grow by its announced length, it is delivered when its receive is posted, and a peer that
// hangs up meanwhile is still noticed. Sends over the limit are refused. Messages beyond the
// budget arrive intact over plain and encrypted connections.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "support/socket_mesh.h"
#include "transport/socket/socket_transport.h"

namespace equarx::transport {
namespace {

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }
double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The 16-byte data frame header {tag, length} (host byte order, as src/transport/stream/stream_transport.cc).
bool SendHeader(int fd, uint64_t tag, uint64_t length) {
  const uint64_t h[2] = {tag, length};
  return send(fd, h, sizeof h, MSG_NOSIGNAL) == ssize_t(sizeof h);
}

size_t ResidentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return size_t(resident) * size_t(sysconf(_SC_PAGESIZE));
}

void ExpectProtocolError(const Status& st) {
  EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  EXPECT_NE(st.message().find("connection to rank 1 lost: protocol error"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("more than the 2147483647-byte limit"), std::string::npos) << st.ToString();
}

// Rank 0 real, rank 1 the test's authenticated socket `fd` (default limits: 2 GiB - 1 per
// message, 16 MiB held per peer).
class HostilePeer : public ::testing::Test {
 protected:
  void SetUp() override {
    fd = m.ConnectAsRank1();
    ASSERT_GE(fd, 0);
    t = m.transport();
  }
  void TearDown() override {
    if (fd >= 0) close(fd);
  }
  testing::OneRealRank m;
  int fd = -1;
  Transport* t = nullptr;
};

TEST_F(HostilePeer, AnOversizedHeaderFailsThePostedReceiveNamingThePeer) {
  char buf[64];
  Request r, r2;
  ASSERT_TRUE(t->Irecv(1, 5, buf, sizeof buf, &r).ok());
  ASSERT_TRUE(SendHeader(fd, 5, uint64_t(1) << 62));
  const auto t0 = Clock::now();
  ExpectProtocolError(t->Wait(&r, In(5000)));
  EXPECT_LT(MsSince(t0), 1000.0);
  // The connection is gone: later requests on it fail at once, with the same reason.
  ASSERT_TRUE(t->Irecv(1, 6, buf, sizeof buf, &r2).ok());
  ExpectProtocolError(t->Wait(&r2, In(5000)));
}

TEST_F(HostilePeer, AnOversizedHeaderNobodyWaitsForFailsTheNextRequest) {
  ASSERT_TRUE(SendHeader(fd, 77, uint64_t(1) << 40));  // no receive for tag 77
  int x = 0;
  Request r;
  ASSERT_TRUE(t->Irecv(1, 5, &x, sizeof x, &r).ok());
  const size_t rss0 = ResidentBytes();
  ExpectProtocolError(t->Wait(&r, In(5000)));
  EXPECT_LT(ResidentBytes(), rss0 + (size_t(64) << 20));
}

TEST_F(HostilePeer, AMessageOverTheBudgetWaitsInTheKernelNotInMemory) {
  const uint64_t announced = uint64_t(1) << 30;  // 1 GiB, under the 2 GiB message limit
  ASSERT_TRUE(SendHeader(fd, 7, announced));
  std::vector<uint8_t> some(256 << 10, 0xAB);
  ASSERT_EQ(send(fd, some.data(), some.size(), MSG_NOSIGNAL), ssize_t(some.size()));
  const size_t rss0 = ResidentBytes();
  int x = 0;
  Request other, r7;
  ASSERT_TRUE(t->Irecv(1, 8, &x, sizeof x, &other).ok());
  EXPECT_EQ(t->Wait(&other, In(300)).code(), StatusCode::kTimeout);  // tag 8 is behind it
  EXPECT_LT(ResidentBytes(), rss0 + (size_t(64) << 20)) << "the announced 1 GiB was allocated";
  // Its receive, posted with the size the caller expects, reports the mismatch at once.
  char small[64];
  ASSERT_TRUE(t->Irecv(1, 7, small, sizeof small, &r7).ok());
  Status st = t->Wait(&r7, In(1000));
  EXPECT_EQ(st.code(), StatusCode::kMismatch) << st.ToString();
  EXPECT_NE(st.message().find("with rank 1: 1073741824 bytes sent, 64 expected"), std::string::npos) << st.ToString();
  t->Cancel(&other);
}

TEST_F(HostilePeer, APeerThatHangsUpWhileItsMessageIsHeldIsLost) {
  ASSERT_TRUE(SendHeader(fd, 7, uint64_t(1) << 30));
  int x = 0;
  Request r;
  ASSERT_TRUE(t->Irecv(1, 8, &x, sizeof x, &r).ok());
  EXPECT_EQ(t->Wait(&r, In(200)).code(), StatusCode::kTimeout);  // held: tag 7 first
  close(fd);
  fd = -1;
  const auto t0 = Clock::now();
  Status st = t->Wait(&r, In(5000));
  EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  EXPECT_NE(st.message().find("connection to rank 1 lost"), std::string::npos) << st.ToString();
  EXPECT_LT(MsSince(t0), 1000.0);
}

void MessagesBeyondTheBudget(bool encrypt) {
  std::vector<std::unique_ptr<Transport>> t;
  auto opts = [encrypt](int, SocketOptions* o) {
    o->max_unexpected_bytes = size_t(1) << 20;
    o->encrypt = encrypt;
  };
  for (const Status& s : testing::SocketMesh(2, &t, opts)) ASSERT_TRUE(s.ok()) << s.ToString();
  const size_t n = size_t(1) << 20;  // floats
  std::vector<std::vector<float>> src(3, std::vector<float>(n)), dst(3, std::vector<float>(n, -1.0f));
  for (int k = 0; k < 3; ++k) std::iota(src[size_t(k)].begin(), src[size_t(k)].end(), float(k * 7));
  int tail = 42, tail_got = 0;
  std::thread sender([&] {
    Request s[4];
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(t[0]->Isend(1, uint64_t(k + 1), src[size_t(k)].data(), n * 4, &s[k]).ok());
    ASSERT_TRUE(t[0]->Isend(1, 4, &tail, sizeof tail, &s[3]).ok());
    for (Request& q : s) ASSERT_TRUE(t[0]->Wait(&q, In(20000)).ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Request r[4];
  ASSERT_TRUE(t[1]->Irecv(0, 4, &tail_got, sizeof tail_got, &r[3]).ok());
  ASSERT_TRUE(t[1]->Irecv(0, 3, dst[2].data(), n * 4, &r[2]).ok());
  EXPECT_EQ(t[1]->Wait(&r[3], In(200)).code(), StatusCode::kTimeout);  // behind message 1
  ASSERT_TRUE(t[1]->Irecv(0, 1, dst[0].data(), n * 4, &r[0]).ok());
  ASSERT_TRUE(t[1]->Irecv(0, 2, dst[1].data(), n * 4, &r[1]).ok());
  for (Request& q : r) ASSERT_TRUE(t[1]->Wait(&q, In(20000)).ok());
  sender.join();
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(dst[size_t(k)] == src[size_t(k)]) << "message " << k + 1;
  EXPECT_EQ(tail_got, 42);
}

TEST(SocketFrames, MessagesBeyondTheBudgetArriveIntactInAnyPostingOrder) {
  // Rank 0 sends four messages (4 MiB, 4 MiB, 4 MiB, 4 bytes) before rank 1 posts anything;
  // rank 1 holds at most 1 MiB unclaimed, so the first one waits in the kernel and the
  // others behind it. Rank 0 stops calling the transport once its sends are done: their
  // last bytes must then be in the kernel, not in a record layer's buffer (encrypted).
  for (const bool encrypt : {false, true}) {
    SCOPED_TRACE(encrypt ? "encrypted" : "plain");
    MessagesBeyondTheBudget(encrypt);
  }
}

TEST(SocketFrames, ASendOverTheLimitIsRefused) {
  std::vector<std::unique_ptr<Transport>> t;
  auto opts = [](int, SocketOptions* o) { o->max_message_bytes = size_t(1) << 20; };
  for (const Status& s : testing::SocketMesh(2, &t, opts)) ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<uint8_t> a((size_t(1) << 20) + 1, 3), b(a.size(), 0);
  Request s, r;
  Status st = t[0]->Isend(1, 1, a.data(), a.size(), &s);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("exceeds the socket transport's limit of 1048576"), std::string::npos) << st.ToString();
  // Exactly the limit is fine.
  ASSERT_TRUE(t[1]->Irecv(0, 2, b.data(), a.size() - 1, &r).ok());
  ASSERT_TRUE(t[0]->Isend(1, 2, a.data(), a.size() - 1, &s).ok());
  std::thread tx([&] { EXPECT_TRUE(t[0]->Wait(&s, In(10000)).ok()); });
  EXPECT_TRUE(t[1]->Wait(&r, In(10000)).ok());
  tx.join();
  EXPECT_EQ(b[a.size() - 2], 3);
}

}  // namespace
}  // namespace equarx::transport
