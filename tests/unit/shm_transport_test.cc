// The shared-memory transport across real processes (fork): the segment is shared by two
// processes, a peer process that is killed is a kRemoteError naming it within a liveness slice
// (pidfd), a peer that is stopped leaves the waiter asleep until its deadline (kTimeout, no
// earlier), and the segment's name is gone from /dev/shm once set-up is over. The behaviour
// common to every stream backend is tested in stream_transport_test.cc.
#include "transport/shm/shm_transport.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>
#include <string>

#include "support/socket_mesh.h"

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

// Segments in /dev/shm created by process `pid` (rank 0 names its segment "equarx-<pid>-<random>").
// Only this process's own names are counted: other tests running at the same time (ctest -j)
// create and unlink segments of their own.
size_t ShmEntriesOf(pid_t pid) {
  const std::string prefix = "equarx-" + std::to_string(int(pid)) + "-";
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    n += e.path().filename().string().rfind(prefix, 0) == 0;
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
  std::unique_ptr<Transport> t;
  const pid_t child = StartPair(&t);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(t);
  EXPECT_EQ(ShmEntriesOf(getpid()), 0u) << "the segment's name must be unlinked once set-up is over";
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

// A small /dev/shm (Docker's default is 64 MiB): the default rings shrink to fit, explicit
// ones that do not fit are a clear set-up error on every rank, never a SIGBUS later. Runs in a
// child with its own mount namespace and a 1 MiB tmpfs on /dev/shm (needs root, as CI has).
TEST(Shm, ASmallDevShmShrinksDefaultRingsAndRefusesExplicitOnesClearly) {
  const pid_t child = fork();
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0)
      _exit(10);  // not root (or no mount namespaces)
    std::vector<std::unique_ptr<Transport>> t;
    for (const Status& s : testing::ShmMesh(2, &t)) {
      if (!s.ok()) _exit(11);
    }
    // The default rings shrank to fit: a message far larger than the room still arrives.
    std::vector<uint8_t> a(size_t(4) << 20, 7), b(a.size());
    Request s, r;
    if (!t[0]->Isend(1, 1, a.data(), a.size(), &s).ok() || !t[1]->Irecv(0, 1, b.data(), b.size(), &r).ok()) _exit(12);
    std::thread tx([&] { (void)t[0]->Wait(&s, In(20000)); });
    const bool got = t[1]->Wait(&r, In(20000)).ok() && a == b;
    tx.join();
    if (!got) _exit(13);
    t.clear();
    const std::vector<Status> st = testing::ShmMesh(2, &t, [](int, ShmOptions* o) { o->ring_bytes = size_t(1) << 20; });
    if (st[0].code() != StatusCode::kInvalidArgument || st[0].message().find("/dev/shm") == std::string::npos) _exit(14);
    if (st[1].code() != StatusCode::kInvalidArgument || st[1].message().find("failed on rank 0") == std::string::npos) _exit(15);
    _exit(0);
  }
  int ws = 0;
  ASSERT_EQ(waitpid(child, &ws, 0), child);
  ASSERT_TRUE(WIFEXITED(ws)) << "the child died of a signal: " << (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  const int code = WEXITSTATUS(ws);
  if (code == 10) {
    const char* ci = std::getenv("CI");
    ASSERT_FALSE(ci && std::string(ci) == "true") << "CI must run this test as root (unshare + mount)";
    GTEST_SKIP() << "needs root for a private /dev/shm";
  }
  EXPECT_EQ(code, 0) << "11: set-up failed, 12/13: the message did not arrive whole, 14/15: no clear error";
}

}  // namespace
}  // namespace equarx::transport
