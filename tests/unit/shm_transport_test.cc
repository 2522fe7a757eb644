// The shared-memory transport across real processes (fork): the segment is shared by two
// processes, a peer process that is killed is a kRemoteError naming it within a liveness slice
// (pidfd), a peer that is stopped leaves the waiter asleep until its deadline (kTimeout, no
// earlier), and the segment's name is gone from /dev/shm once set-up is over. The behaviour
// common to every stream backend is tested in stream_transport_test.cc.
#include "transport/shm/shm_transport.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

namespace equarx::transport {
namespace {

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// The all-gather of two processes over one end of a socketpair each.
AllGather PairGather(int fd, int rank) {
  return [fd, rank](const void* mine, size_t bytes, void* all) -> Status {
    auto* out = static_cast<uint8_t*>(all);
    std::memcpy(out + size_t(rank) * bytes, mine, bytes);
    if (write(fd, mine, bytes) != ssize_t(bytes)) return Internal("pair gather: write failed");
    size_t got = 0;
    while (got < bytes) {
      const ssize_t r = read(fd, out + size_t(1 - rank) * bytes + got, bytes - got);
      if (r <= 0) return Internal("pair gather: read failed");
      got += size_t(r);
    }
    return Status::Ok();
  };
}

size_t ShmEntries() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    n += e.path().filename().string().rfind("equarx-", 0) == 0;
  return n;
}

// Forks rank 1, which sets up (1 MiB rings), sends one int (tag 1) to rank 0 and then sleeps
// until it is signalled. Returns rank 0's transport (this process) and the child's pid.
pid_t StartPair(std::unique_ptr<Transport>* t) {
  ShmOptions o;
  o.ring_bytes = size_t(1) << 20;
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(sp[0]);
    std::unique_ptr<Transport> mine;
    if (!CreateShmTransport(1, 2, PairGather(sp[1], 1), o, &mine).ok()) _exit(2);
    int x = 41;
    Request s;
    if (!mine->Isend(0, 1, &x, sizeof x, &s).ok() || !mine->Wait(&s, In(10000)).ok()) _exit(3);
    for (;;) pause();
  }
  close(sp[1]);
  const Status st = CreateShmTransport(0, 2, PairGather(sp[0], 0), o, t);
  close(sp[0]);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return child;
  int y = 0;
  Request r;
  EXPECT_TRUE((*t)->Irecv(1, 1, &y, sizeof y, &r).ok());
  EXPECT_TRUE((*t)->Wait(&r, In(10000)).ok());
  EXPECT_EQ(y, 41);
  return child;
}

TEST(ShmProcess, KilledPeerIsARemoteErrorWithinALivenessSlice) {
  const size_t before = ShmEntries();
  std::unique_ptr<Transport> t;
  const pid_t child = StartPair(&t);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(t);
  EXPECT_EQ(ShmEntries(), before) << "the segment's name must be unlinked once set-up is over";
  int y = 0;
  Request r;
  ASSERT_TRUE(t->Irecv(1, 2, &y, sizeof y, &r).ok());
  kill(child, SIGKILL);
  const auto t0 = Clock::now();
  const Status st = t->Wait(&r, In(10000));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  waitpid(child, nullptr, 0);
  EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  EXPECT_NE(st.message().find("connection to rank 1 lost: rank 1's process (pid " + std::to_string(child) +
                              ") is gone"),
            std::string::npos)
      << st.ToString();
  EXPECT_LT(ms, 1000.0);
  // A send to it fails too, at once.
  Request s;
  ASSERT_TRUE(t->Isend(1, 3, &y, sizeof y, &s).ok());
  EXPECT_EQ(t->Wait(&s, In(10000)).code(), StatusCode::kRemoteError);
}

TEST(ShmProcess, StoppedPeerIsATimeoutAtTheDeadlineNotBefore) {
  std::unique_ptr<Transport> t;
  const pid_t child = StartPair(&t);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(t);
  kill(child, SIGSTOP);
  // A send larger than the ring (1 MiB) cannot complete while the peer does not read.
  std::vector<uint8_t> big(size_t(8) << 20, 1);
  Request s;
  ASSERT_TRUE(t->Isend(1, 2, big.data(), big.size(), &s).ok());
  const auto t0 = Clock::now();
  const Status st = t->Wait(&s, In(600));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  t->Cancel(&s);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.ToString();
  EXPECT_GE(ms, 595.0);
  EXPECT_LT(ms, 900.0);
}

}  // namespace
}  // namespace equarx::transport
