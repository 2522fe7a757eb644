// The transport contract, one suite over every transport that runs in one process (Contract):
// threads of one process (inproc), TCP over loopback (socket; socket_enc encrypted, with a key
// update every 5 records), rings in shared memory (shm) and the host-aware mix of both (host,
// hosts; hosts_enc with its TCP encrypted), one thread per rank: matching by (source, tag)
// in posting order, messages that arrive before their receive, zero-length messages and
// messages to oneself, large messages every way at once, many small ones on many ranks, a
// cancelled receive, length errors, deadlines and peers out of range. Then what the
// byte-stream transports add (Stream): a send cancelled while partly in the stream, a lost
// peer reported as kRemoteError long before the deadline, Abort, set-up failures reported on
// every rank, and whole AllReduces bitwise equal to the in-process transport's. The MPI
// transport runs under mpirun (tests/mpi); the shm transport's cross-process failures (a
// killed or stopped peer process) are in shm_transport_test.cc.
#include "transport/socket/socket_transport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "equarx/communicator.h"
#include "support/harness.h"
#include "transport/inproc/inproc_transport.h"
#include "support/socket_mesh.h"

namespace equarx::transport {
namespace {

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// One message of PostBothAndWait.
struct Msg {
  uint64_t tag;
  void* buf;
  size_t bytes;
  Request* req;
};

// The int that `peer` sends with `tag`, received on t (the receive must complete).
int ReceiveInt(Transport* t, int peer, uint64_t tag) {
  int v = 0;
  Request r;
  Status st = t->Irecv(peer, tag, &v, sizeof v, &r);
  if (st.ok()) st = t->Wait(&r, In(5000));
  EXPECT_TRUE(st.ok()) << st.ToString();
  return v;
}

// Posts a and then b with `peer` (sends when `send`, else receives), then waits for a and b.
void PostBothAndWait(Transport* t, bool send, int peer, Msg a, Msg b) {
  for (const Msg& m : {a, b})
    ASSERT_TRUE((send ? t->Isend(peer, m.tag, m.buf, m.bytes, m.req) : t->Irecv(peer, m.tag, m.buf, m.bytes, m.req)).ok());
  for (const Msg& m : {a, b}) ASSERT_TRUE(t->Wait(m.req, In(20000)).ok());
}

std::vector<Status> Mesh(int n, std::vector<std::unique_ptr<Transport>>* out,
                         const std::function<void(int, SocketOptions*)>& options = nullptr) {
  return testing::SocketMesh(n, out, options);
}

// Each test runs on every backend of its suite (the parameter).
class Stream : public ::testing::TestWithParam<const char*> {
 protected:
  void MeshOk(int n, std::vector<std::unique_ptr<Transport>>* t) {
    const std::string b = GetParam();
    if (b == "inproc") {
      auto fabric = CreateInprocFabric(n);
      t->clear();
      for (int r = 0; r < n; ++r) t->push_back(CreateInprocTransport(fabric, r));
      return;
    }
    const auto two_hosts = [n](int r) { return std::string(r < (n + 1) / 2 ? "a" : "b"); };
    const auto encrypt = [](int, SocketOptions* o) { o->encrypt = true; };
    const std::vector<Status> st =
        b == "shm"         ? testing::ShmMesh(n, t)
        : b == "host"      ? testing::HostMesh(n, t, [](int) { return std::string("one-host"); })
        : b == "hosts"     ? testing::HostMesh(n, t, two_hosts)
        : b == "hosts_enc" ? testing::HostMesh(n, t, two_hosts, encrypt)
        : b == "socket_enc" ? testing::SocketMesh(n, t, [](int, SocketOptions* o) {
                                o->encrypt = true;
                                o->records.records_per_key = 5;
                              })
                            : testing::SocketMesh(n, t);
    for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.ToString();
  }
};
// host: the host-aware transport with every rank on one host (rings, TCP as doorbells);
// hosts: ranks split over two hosts (3 ranks: 2 + 1; 4 ranks: 2 + 2), rings and TCP mixed.
INSTANTIATE_TEST_SUITE_P(Backends, Stream,
                         ::testing::Values("socket", "socket_enc", "shm", "host", "hosts", "hosts_enc"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });
class Contract : public Stream {};
INSTANTIATE_TEST_SUITE_P(Transports, Contract,
                         ::testing::Values("inproc", "socket", "socket_enc", "shm", "host", "hosts", "hosts_enc"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

TEST_P(Contract, SendBeforeAndAfterReceiveIsPostedAndTagsMatchInOrder) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(2, &t);
  int v[3] = {1, 2, 3}, got[3] = {}, late = 0, x = 42;
  Request s[3], r[3], se, re;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t[0]->Isend(1, 7, &v[i], sizeof(int), &s[i]).ok());
  ASSERT_TRUE(t[1]->Irecv(0, 8, &late, sizeof late, &re).ok());  // posted before its send
  ASSERT_TRUE(t[0]->Isend(1, 8, &x, sizeof x, &se).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t[1]->Irecv(0, 7, &got[i], sizeof(int), &r[i]).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t[1]->Wait(&r[i], In(5000)).ok());
  ASSERT_TRUE(t[1]->Wait(&re, In(5000)).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t[0]->Wait(&s[i], In(5000)).ok());
  ASSERT_TRUE(t[0]->Wait(&se, In(5000)).ok());
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(got[2], 3);
  EXPECT_EQ(late, 42);
  EXPECT_EQ(t[0]->bytes_sent(), 4 * sizeof(int));
  // Zero-length messages and messages to oneself.
  Request z1, z2, m1, m2;
  int a = 5, b = 0;
  ASSERT_TRUE(t[1]->Irecv(0, 9, nullptr, 0, &z2).ok());
  ASSERT_TRUE(t[0]->Isend(1, 9, nullptr, 0, &z1).ok());
  ASSERT_TRUE(t[1]->Wait(&z2, In(5000)).ok());
  ASSERT_TRUE(t[0]->Isend(0, 3, &a, sizeof a, &m1).ok());
  ASSERT_TRUE(t[0]->Irecv(0, 3, &b, sizeof b, &m2).ok());
  ASSERT_TRUE(t[0]->Wait(&m2, In(5000)).ok());
  ASSERT_TRUE(t[0]->Wait(&z1, In(5000)).ok());
  EXPECT_EQ(b, 5);
}

TEST_P(Contract, LargeMessagesEveryWayAtOnce) {
  // 3 ranks each send 8 MiB to both others before waiting on anything: far more than the
  // kernel buffers, so this only completes if waiting on one request progresses all of them.
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(3, &t);
  const size_t n = size_t(2) << 20;
  std::vector<std::vector<float>> src(3), dst(9);
  for (int r = 0; r < 3; ++r) {
    src[size_t(r)].resize(n);
    std::iota(src[size_t(r)].begin(), src[size_t(r)].end(), float(r * 1000));
  }
  const std::vector<Status> st = tools::RunOnRanks(3, [&](int r) {
    Request reqs[4];
    int k = 0;
    for (int p = 0; p < 3; ++p) {
      if (p == r) continue;
      dst[size_t(3 * r + p)].assign(n, -1.0f);
      EQUARX_RETURN_IF_ERROR(t[size_t(r)]->Irecv(p, 1, dst[size_t(3 * r + p)].data(), n * 4, &reqs[k++]));
      EQUARX_RETURN_IF_ERROR(t[size_t(r)]->Isend(p, 1, src[size_t(r)].data(), n * 4, &reqs[k++]));
    }
    for (Request& q : reqs) EQUARX_RETURN_IF_ERROR(t[size_t(r)]->Wait(&q, In(20000)));
    return Status::Ok();
  });
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.ToString();
  for (int r = 0; r < 3; ++r) {
    for (int p = 0; p < 3; ++p) {
      if (p == r) continue;
      EXPECT_EQ(dst[size_t(3 * r + p)], src[size_t(p)]) << r << " from " << p;
    }
  }
}

TEST_P(Contract, LengthMismatchIsAnErrorAndTheStreamStaysInStep) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(2, &t);
  char big[16] = {}, small[8];
  int after = 11;
  Request s, r, s2;
  ASSERT_TRUE(t[1]->Irecv(0, 1, small, sizeof small, &r).ok());
  ASSERT_TRUE(t[0]->Isend(1, 1, big, sizeof big, &s).ok());
  ASSERT_TRUE(t[0]->Isend(1, 2, &after, sizeof after, &s2).ok());
  Status st = t[1]->Wait(&r, In(5000));
  EXPECT_EQ(st.code(), StatusCode::kMismatch);
  EXPECT_NE(st.message().find("16 bytes sent, 8 expected"), std::string::npos) << st.ToString();
  EXPECT_EQ(ReceiveInt(t[1].get(), 0, 2), 11);
}

TEST_P(Contract, CancelledReceiveLeavesTheMessageForTheNextOne) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(2, &t);
  int x = 3, y = 0, z = 0;
  Request s, r1, r2;
  ASSERT_TRUE(t[1]->Irecv(0, 5, &y, sizeof y, &r1).ok());
  t[1]->Cancel(&r1);
  ASSERT_TRUE(t[0]->Isend(1, 5, &x, sizeof x, &s).ok());
  ASSERT_TRUE(t[1]->Irecv(0, 5, &z, sizeof z, &r2).ok());
  ASSERT_TRUE(t[1]->Wait(&r2, In(5000)).ok());
  EXPECT_EQ(y, 0);
  EXPECT_EQ(z, 3);
}

TEST_P(Stream, CancelledSendInFlightStillArrivesWhole) {
  // A send the kernel has only partly taken: after Cancel the caller may reuse its buffer,
  // and the receiver still gets the original bytes followed by the next message.
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(2, &t);
  const size_t n = size_t(16) << 20;
  std::vector<uint8_t> a(n), want(n), b(n, 0);
  for (size_t i = 0; i < n; ++i) a[i] = uint8_t(i * 7 + 1);
  want = a;
  Request s, s2, r, r2;
  int tail = 77, tail_got = 0;
  ASSERT_TRUE(t[0]->Isend(1, 1, a.data(), n, &s).ok());
  Status st;
  EXPECT_FALSE(t[0]->Test(&s, &st));  // 16 MiB cannot all be in the kernel (or the ring) yet
  t[0]->Cancel(&s);
  std::fill(a.begin(), a.end(), uint8_t(0xEE));  // the buffer is ours again
  ASSERT_TRUE(t[0]->Isend(1, 2, &tail, sizeof tail, &s2).ok());
  std::thread rx([&] { PostBothAndWait(t[1].get(), false, 0, {1, b.data(), n, &r}, {2, &tail_got, sizeof tail_got, &r2}); });
  ASSERT_TRUE(t[0]->Wait(&s2, In(20000)).ok());
  rx.join();
  EXPECT_TRUE(b == want);
  EXPECT_EQ(tail_got, 77);
}

TEST_P(Contract, PeerOutOfRangeIsAnError) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(2, &t);
  int x = 0;
  Request r;
  EXPECT_EQ(t[0]->Isend(2, 0, &x, sizeof x, &r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t[0]->Irecv(-1, 0, &x, sizeof x, &r).code(), StatusCode::kInvalidArgument);
}

TEST_P(Contract, ManyRanksManySmallMessages) {
  // 5 ranks, each 200 tagged messages to its right-hand neighbour and 200 from its left, all
  // posted before any wait: every one arrives, in its own receive.
  const int n = 5, msgs = 200;
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(n, &t);
  std::vector<int> ok(n, 0);
  tools::RunOnRanks(n, [&](int r) {
    std::vector<Request> sreq(msgs), rreq(msgs);
    std::vector<int> out(msgs), in(msgs, -1);
    for (int i = 0; i < msgs; ++i) {
      out[size_t(i)] = r * 1000 + i;
      (void)t[size_t(r)]->Irecv((r + n - 1) % n, uint64_t(i), &in[size_t(i)], sizeof(int), &rreq[size_t(i)]);
      (void)t[size_t(r)]->Isend((r + 1) % n, uint64_t(i), &out[size_t(i)], sizeof(int), &sreq[size_t(i)]);
    }
    bool good = true;
    for (int i = 0; i < msgs; ++i) {
      good &= t[size_t(r)]->Wait(&rreq[size_t(i)], In(10000)).ok() && in[size_t(i)] == ((r + n - 1) % n) * 1000 + i;
      good &= t[size_t(r)]->Wait(&sreq[size_t(i)], In(10000)).ok();
    }
    ok[size_t(r)] = good;
    return Status::Ok();  // what counts is ok[r]
  });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(ok[size_t(r)]) << "rank " << r;
}

TEST_P(Contract, NothingArrivingIsATimeoutAtTheDeadline) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(2, &t);
  int y = 0;
  Request r;
  ASSERT_TRUE(t[1]->Irecv(0, 1, &y, sizeof y, &r).ok());
  const auto t0 = Clock::now();
  Status st = t[1]->Wait(&r, In(200));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.ToString();
  EXPECT_GE(ms, 195.0);
  EXPECT_LT(ms, 1500.0);
  t[1]->Cancel(&r);
}

TEST_P(Stream, LostPeerIsARemoteErrorLongBeforeTheDeadline) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(3, &t);
  int y = 0;
  Request r, r2, s;
  ASSERT_TRUE(t[0]->Irecv(2, 1, &y, sizeof y, &r).ok());
  t[2].reset();  // rank 2 goes away: its connections (or rings) close
  const auto t0 = Clock::now();
  Status st = t[0]->Wait(&r, In(10000));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  EXPECT_NE(st.message().find("connection to rank 2 lost"), std::string::npos) << st.ToString();
  EXPECT_LT(ms, 2000.0);
  // Later requests to the lost rank fail at once; the other connection still works.
  ASSERT_TRUE(t[0]->Irecv(2, 2, &y, sizeof y, &r2).ok());
  EXPECT_EQ(t[0]->Wait(&r2, In(10000)).code(), StatusCode::kRemoteError);
  int x = 9;
  ASSERT_TRUE(t[1]->Isend(0, 3, &x, sizeof x, &s).ok());
  EXPECT_EQ(ReceiveInt(t[0].get(), 1, 3), 9);
}

TEST_P(Stream, AbortFailsEveryPeerPromptly) {
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(3, &t);
  int y1 = 0, y2 = 0;
  Request r1, r2;
  ASSERT_TRUE(t[1]->Irecv(0, 1, &y1, sizeof y1, &r1).ok());
  ASSERT_TRUE(t[2]->Irecv(0, 1, &y2, sizeof y2, &r2).ok());
  t[0]->Abort("a test");
  const auto t0 = Clock::now();
  std::thread other([&] {
    const Status st = t[2]->Wait(&r2, In(10000));
    EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  });
  const Status st = t[1]->Wait(&r1, In(10000));
  other.join();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(st.code(), StatusCode::kRemoteError) << st.ToString();
  EXPECT_NE(st.message().find("rank 0"), std::string::npos) << st.ToString();
  EXPECT_LT(ms, 2000.0);
  // The aborted rank's own requests fail too, saying why.
  Request s;
  ASSERT_TRUE(t[0]->Isend(1, 2, &y1, sizeof y1, &s).ok());
  const Status own = t[0]->Wait(&s, In(10000));
  EXPECT_EQ(own.code(), StatusCode::kRemoteError);
  EXPECT_NE(own.message().find("this rank ended its connections: a test"), std::string::npos) << own.ToString();
}

TEST_P(Stream, AFailedCommunicatorTellsTheGroupAtOnce) {
  // Ranks 0 and 1 time out after 300 ms waiting for rank 2, which joins only after 1 s with a
  // 10 s deadline: their failed communicators end their connections, so rank 2's call fails
  // at once instead of waiting out its deadline.
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(3, &t);
  std::vector<std::unique_ptr<Communicator>> c;
  for (auto& x : t) c.push_back(std::make_unique<Communicator>(std::move(x)));
  std::vector<double> ms(3);
  const std::vector<Status> st = tools::RunOnRanks(3, [&](int r) {
    if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    std::vector<float> x(4096, 1.0f), y(4096);
    AllReduceOptions o;
    o.algorithm = Algorithm::kRing;
    o.timeout_ms = r == 2 ? 10000 : 300;
    const auto t0 = Clock::now();
    const Status s = c[size_t(r)]->AllReduce(x.data(), y.data(), x.size(), DType::kFloat32, o);
    ms[size_t(r)] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return s;
  });
  for (int r : {0, 1}) {
    EXPECT_FALSE(st[size_t(r)].ok());
    EXPECT_LT(ms[size_t(r)], 2000.0) << r;
  }
  EXPECT_EQ(st[2].code(), StatusCode::kRemoteError) << st[2].ToString();
  EXPECT_LT(ms[2], 2000.0) << st[2].ToString();
}

// A set-up of 3 ranks that failed on rank `bad`: kInvalidArgument there, saying `cause`; the
// other ranks get `others`, saying `others_say`.
void ExpectSetupFailureReported(const std::vector<Status>& st, size_t bad, const char* cause,
                                StatusCode others, const char* others_say) {
  ASSERT_EQ(st.size(), 3u);
  for (size_t r = 0; r < st.size(); ++r) {
    const bool is_bad = r == bad;
    EXPECT_EQ(st[r].code(), is_bad ? StatusCode::kInvalidArgument : others) << st[r].ToString();
    EXPECT_NE(st[r].message().find(is_bad ? cause : others_say), std::string::npos) << st[r].ToString();
  }
}

TEST(Shm, SetupFailureOnOneRankIsReportedOnEveryRank) {
  std::vector<std::unique_ptr<Transport>> t;
  std::vector<Status> st = testing::ShmMesh(3, &t, [](int r, ShmOptions* o) {
    if (r == 0) o->ring_bytes = 8;  // rank 0 sizes the group's rings
  });
  ExpectSetupFailureReported(st, 0, "ring_bytes 8", StatusCode::kInvalidArgument, "failed on rank 0");
}

TEST(Shm, SmallRingsCarryLargeMessagesInOrder) {
  // 64-byte rings: every message wraps many times, headers split across the end.
  std::vector<std::unique_ptr<Transport>> t;
  for (const Status& s : testing::ShmMesh(2, &t, [](int, ShmOptions* o) { o->ring_bytes = 64; }))
    ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<uint8_t> a(100003), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 13 + 5);
  int x = 7, y = 0;
  Request s1, s2, r1, r2;
  std::thread tx([&] { PostBothAndWait(t[0].get(), true, 1, {1, a.data(), a.size(), &s1}, {2, &x, sizeof x, &s2}); });
  // The receive of tag 2 is posted first and arrives second.
  PostBothAndWait(t[1].get(), false, 0, {2, &y, sizeof y, &r2}, {1, b.data(), b.size(), &r1});
  tx.join();
  EXPECT_TRUE(a == b);
  EXPECT_EQ(y, 7);
}

TEST(Socket, SetupFailureOnOneRankIsReportedOnEveryRank) {
  std::vector<std::unique_ptr<Transport>> t;
  const auto t0 = Clock::now();
  std::vector<Status> st = Mesh(3, &t, [](int r, SocketOptions* o) {
    if (r == 1) o->interface = "no-such-interface0";
  });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 4.0);
  ExpectSetupFailureReported(st, 1, "no-such-interface0", StatusCode::kRemoteError, "rank 1");
}

TEST_P(Stream, AllReduceIsBitwiseEqualToInProcess) {
  const int n = 4;
  std::vector<std::unique_ptr<Transport>> t;
  MeshOk(n, &t);
  std::vector<std::unique_ptr<Communicator>> sock;  // over this test's backend
  for (auto& x : t) sock.push_back(std::make_unique<Communicator>(std::move(x)));
  std::vector<std::unique_ptr<Communicator>> inproc;
  ASSERT_TRUE(CreateInProcessGroup(n, &inproc).ok());
  const size_t count = 300000;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kFullBidir, Algorithm::kTwoShot, Algorithm::kSemi,
                      Algorithm::kHierarchical}) {
    AllReduceOptions o;
    o.algorithm = a;
    o.timeout_ms = 20000;
    // hierarchical: 2 hosts of 2 ranks (the layout of the "hosts" backend: its intra-host steps
    // then go through the rings, the inter-host ones over TCP).
    if (a == Algorithm::kHierarchical) o.ranks_per_host = 2;
    std::vector<std::vector<float>> out_s(n), out_i(n);
    auto run = [&](std::vector<std::unique_ptr<Communicator>>& comms,
                   std::vector<std::vector<float>>& out) {
      return tools::RunOnRanks(comms, [&](Communicator& c) {
        std::vector<float> x(count);
        for (size_t i = 0; i < count; ++i) x[i] = float(std::sin(0.001 * double(i) * (c.rank() + 1)));
        out[size_t(c.rank())].resize(count);
        return c.AllReduce(x.data(), out[size_t(c.rank())].data(), count, DType::kFloat32, o);
      });
    };
    for (const Status& s : run(sock, out_s)) ASSERT_TRUE(s.ok()) << s.ToString();
    for (const Status& s : run(inproc, out_i)) ASSERT_TRUE(s.ok()) << s.ToString();
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(0, std::memcmp(out_s[size_t(r)].data(), out_i[size_t(r)].data(), count * 4))
          << AlgorithmName(a) << " rank " << r;
  }
}

// The host data path finds the hosts (host name and boot id; here each rank's stand-in name)
// and their layout: R consecutive ranks per host (the last may have fewer; one host: all the
// ranks), else 1. A communicator over it takes that layout as ranks_per_host's default:
// hierarchical without ranks_per_host runs bitwise the call with it, and sends its bytes.
TEST(HostLayout, FoundByTheHostPathAndTheDefaultOfRanksPerHost) {
  const std::vector<std::pair<std::vector<std::string>, std::pair<int, int>>> cases = {
      {{"a", "a", "b", "b"}, {2, 2}}, {{"a", "a", "b"}, {2, 2}}, {{"a", "b", "a", "b"}, {1, 2}},
      {{"a", "a", "a", "a"}, {4, 4}}, {{"a", "b", "c"}, {1, 1}}, {{"a", "a", "a", "b", "b", "b"}, {3, 3}}};
  for (const auto& [names, want] : cases) {
    const std::vector<std::string>& hosts = names;  // a lambda may not capture a structured binding
    const int n = int(hosts.size());
    std::vector<std::unique_ptr<Transport>> t;
    const auto st = testing::HostMesh(n, &t, [&](int r) { return hosts[size_t(r)]; });
    for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.ToString();
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(t[size_t(r)]->ranks_per_host(), want.first) << "rank " << r << " of " << n;
      if (r == 0) EXPECT_EQ(t[0]->local_ranks(), want.second) << n;
    }
  }
  std::vector<std::unique_ptr<Transport>> t;
  for (const Status& s : testing::HostMesh(4, &t, [](int r) { return std::string(r < 2 ? "a" : "b"); }))
    ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<std::unique_ptr<Communicator>> comms;
  for (auto& x : t) comms.push_back(std::make_unique<Communicator>(std::move(x)));
  const size_t count = 100003;
  auto run = [&](uint32_t ranks_per_host, std::vector<std::vector<float>>* out, std::vector<uint64_t>* sent) {
    return tools::RunOnRanks(comms, [&, ranks_per_host](Communicator& c) {
      std::vector<float> x(count);
      for (size_t i = 0; i < count; ++i) x[i] = float(std::sin(0.001 * double(i) * (c.rank() + 1)));
      (*out)[size_t(c.rank())].resize(count);
      AllReduceOptions o;
      o.algorithm = Algorithm::kHierarchical;
      o.ranks_per_host = ranks_per_host;
      const uint64_t before = c.stats().bytes_sent;
      const Status s = c.AllReduce(x.data(), (*out)[size_t(c.rank())].data(), count, DType::kFloat32, o);
      (*sent)[size_t(c.rank())] = c.stats().bytes_sent - before;
      return s;
    });
  };
  std::vector<std::vector<float>> found(4), given(4);
  std::vector<uint64_t> found_sent(4), given_sent(4);
  for (const Status& s : run(0, &found, &found_sent)) ASSERT_TRUE(s.ok()) << s.ToString();
  for (const Status& s : run(2, &given, &given_sent)) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(found, given);
  EXPECT_EQ(found_sent, given_sent);
}

}  // namespace
}  // namespace equarx::transport
