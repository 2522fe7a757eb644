// equarx socket transport — connection setup: from nothing to an authenticated full mesh.
//
//   1. Every rank draws its share of the secret and publishes an identity card (host name,
//      share) through the caller's all-gather; all derive the secret K (socket_handshake.h).
//   2. Every rank listens on an ephemeral port of one address: 127.0.0.1 when every rank of
//      the group is on this host (nothing outside the host can reach it), otherwise the chosen
//      interface's IPv4 address (never INADDR_ANY; ranks on this host connect to that address
//      too, and the kernel carries it over loopback). It publishes an address card.
//   3. One poll() loop, until every pair is authenticated or the setup deadline passes: rank i
//      connects to every rank j < i (all at once) and accepts from every rank j > i. Every
//      connection, in either direction, has its own handshake state and its own deadline, so
//      a silent, slow or hostile connection delays nobody: it is closed when it breaks the
//      protocol, fails the proof of K or runs out of time (handshake_timeout_ms), and the
//      loop keeps waiting for the real peer. A connecting rank whose handshake is cut off
//      (the acceptor may have shed it under a flood of connections) tries again.
//   4. The listening socket and every connection not in the mesh are closed before the mesh
//      is handed to the data loop (src/transport/stream/): no port stays open afterwards.
// Encrypted (SocketOptions::encrypt): the identity cards say so and every rank checks that all
// agree (else every rank fails at once, naming both sides); K binds the mode; each connection
// derives its data keys (socket_handshake.h) when it is authenticated, before K is wiped.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/socket/socket_handshake.h"
#include "transport/socket/socket_transport.h"

namespace equarx::transport {
namespace {

namespace hs = handshake;

std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(-1); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
 private:
  int fd_;
};

std::string Where(uint32_t addr, uint16_t port) {
  in_addr a{addr};
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(port));
}

std::string Ranks(const std::vector<int>& r) {
  std::string s;
  for (int x : r) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

Status FindAddress(const std::string& want, uint32_t* addr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Internal("getifaddrs: " + ErrnoText(errno));
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    if (want.empty() ? (i->ifa_flags & IFF_LOOPBACK) != 0 : want != i->ifa_name) continue;
    *addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    found = true;
  }
  freeifaddrs(list);
  if (found) return Status::Ok();
  if (want.empty()) {  // a host with loopback only can still talk to itself
    *addr = htonl(INADDR_LOOPBACK);
    return Status::Ok();
  }
  return InvalidArgument("network interface '" + want + "' has no IPv4 address (or is down)");
}

// Listens on an ephemeral port of one address (see the top of this file) and fills `card`.
Status Listen(const SocketOptions& o, bool all_on_this_host, Fd* listener, hs::AddressCard* card) {
  uint32_t addr = 0;
  // Resolved even when unused, so that a wrong interface name fails on one host as on many.
  EQUARX_RETURN_IF_ERROR(FindAddress(o.interface, &addr));
  if (all_on_this_host) addr = htonl(INADDR_LOOPBACK);
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.get() < 0) return Internal("socket: " + ErrnoText(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = addr;
  a.sin_port = 0;
  if (bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Internal("bind to " + Where(addr, 0) + ": " + ErrnoText(errno));
  if (listen(s.get(), 512) != 0) return Internal("listen: " + ErrnoText(errno));
  socklen_t len = sizeof a;
  if (getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return Internal("getsockname: " + ErrnoText(errno));
  card->addr = addr;
  card->port = a.sin_port;
  listener->reset(s.release());
  return Status::Ok();
}

// One connection during setup, in either direction.
struct Link {
  enum Stage {
    kConnecting, kAwaitChallenge, kAwaitVerdict,  // we connected (to `peer`)
    kAwaitHello, kAwaitProof, kSendVerdict,       // we accepted (`peer` known after the hello)
  };
  Fd fd;
  bool outgoing = false;
  int peer = -1;
  Stage stage = kAwaitHello;
  Deadline deadline;
  Clock::time_point opened;
  std::string where;  // the other end, for messages
  hs::Hello hello;
  uint8_t nonce_a[hs::kNonceBytes] = {};  // the acceptor's nonce (either side keeps it)
  uint8_t in[hs::kChallengeBytes] = {};  // the largest message either side reads
  size_t in_got = 0, in_want = 0;
  uint8_t out[hs::kChallengeBytes] = {};
  size_t out_len = 0, out_sent = 0;
  bool closed = false;
};

class MeshBuilder {
 public:
  MeshBuilder(int rank, int size, const hs::Secret& k, const std::vector<hs::AddressCard>& cards,
              const SocketOptions& o, Fd* listener, Deadline deadline)
      : rank_(rank), size_(size), k_(k), cards_(cards), o_(o), listener_(listener),
        deadline_(deadline), mesh_(size_t(size)), keys_(o.encrypt ? size_t(size) : 0), claimed_(size_t(size), false),
        retry_at_(size_t(size), Clock::time_point::max()), retries_(size_t(size), 0) {}

  Status Run(Mesh* out) {
    for (int j = 0; j < rank_; ++j) Connect(j);
    std::vector<pollfd> pfd;
    std::vector<Link*> who;
    while (fatal_.ok() && !Complete()) {
      const auto now = Clock::now();
      if (now >= deadline_) return Timeout(Describe());
      Deadline next = deadline_;
      for (auto& l : links_) {
        if (!l->outgoing && now >= l->deadline) Drop(*l, "sent no complete handshake in time");
        next = std::min(next, l->deadline);
      }
      for (int j = 0; j < rank_; ++j) {
        if (retry_at_[size_t(j)] <= now) Connect(j);
        next = std::min(next, retry_at_[size_t(j)]);
      }
      Prune();
      pfd.clear();
      who.clear();
      if (Accepting()) {
        pfd.push_back({listener_->get(), POLLIN, 0});
        who.push_back(nullptr);
      }
      for (auto& l : links_) {
        short ev = 0;
        if (l->stage == Link::kConnecting || l->out_sent < l->out_len) ev |= POLLOUT;
        if (l->in_got < l->in_want) ev |= POLLIN;
        pfd.push_back({l->fd.get(), ev, 0});
        who.push_back(l.get());
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
      const int n = poll(pfd.data(), nfds_t(pfd.size()), int(std::clamp<int64_t>(wait + 1, 0, 1000)));
      if (n < 0 && errno != EINTR) return Internal("poll: " + ErrnoText(errno));
      for (size_t i = 0; n > 0 && i < pfd.size() && fatal_.ok(); ++i) {
        if (!pfd[i].revents) continue;
        if (!who[i]) Accept();
        else if (!who[i]->closed) Serve(*who[i], pfd[i].revents);
      }
      Prune();
    }
    EQUARX_RETURN_IF_ERROR(fatal_);
    listener_->reset(-1);  // the mesh is up: no port stays open
    links_.clear();        // strays and duplicates still in their handshake
    out->fds.assign(size_t(size_), -1);
    for (int r = 0; r < size_; ++r)
      if (r != rank_) out->fds[size_t(r)] = mesh_[size_t(r)].release();
    if (o_.encrypt) out->keys = keys_;
    return Status::Ok();
  }

 private:
  bool Complete() const {
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && mesh_[size_t(r)].get() < 0) return false;
    return true;
  }
  bool Accepting() const {
    for (int r = rank_ + 1; r < size_; ++r)
      if (!claimed_[size_t(r)]) return true;
    return false;
  }

  void Connect(int j) {
    retry_at_[size_t(j)] = Clock::time_point::max();
    const hs::AddressCard& c = cards_[size_t(j)];
    auto l = std::make_unique<Link>();
    l->outgoing = true;
    l->peer = j;
    l->stage = Link::kConnecting;
    l->deadline = deadline_;
    l->where = Where(c.addr, c.port);
    l->fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (l->fd.get() < 0) return Fatal(*l, "socket: " + ErrnoText(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = c.addr;
    a.sin_port = c.port;
    if (connect(l->fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS)
      return Fatal(*l, "connect: " + ErrnoText(errno));
    l->hello.size = uint32_t(size_);
    l->hello.from = uint32_t(rank_);
    l->hello.to = uint32_t(j);
    Status st = OsRandom(l->hello.nonce_c, sizeof l->hello.nonce_c);
    if (!st.ok()) return Fatal(*l, st.message());
    links_.push_back(std::move(l));
  }

  void Accept() {
    for (;;) {
      sockaddr_in a{};
      socklen_t len = sizeof a;
      Fd s(accept4(listener_->get(), reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (s.get() < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN (drained), or out of descriptors: those wait in the backlog
      }
      Shed();
      auto l = std::make_unique<Link>();
      l->fd.reset(s.release());
      l->opened = Clock::now();
      l->deadline = std::min(deadline_, l->opened + std::chrono::milliseconds(o_.handshake_timeout_ms));
      l->where = Where(a.sin_addr.s_addr, a.sin_port);
      l->in_want = hs::kHelloBytes;
      links_.push_back(std::move(l));
    }
  }

  // Keeps at most max_pending_connections accepted connections in their handshake: the
  // oldest that has not said hello goes first, then the oldest awaiting its proof.
  void Shed() {
    size_t pending = 0;
    Link* victim = nullptr;
    for (auto& l : links_) {
      if (l->outgoing || l->closed) continue;
      ++pending;
      const bool earlier = !victim || (l->stage == Link::kAwaitHello) > (victim->stage == Link::kAwaitHello) ||
                           ((l->stage == Link::kAwaitHello) == (victim->stage == Link::kAwaitHello) &&
                            l->opened < victim->opened);
      if (l->stage != Link::kSendVerdict && earlier) victim = l.get();
    }
    if (pending >= size_t(std::max(1, o_.max_pending_connections)) && victim)
      Drop(*victim, "shed: too many connections in their handshake");
  }

  void Serve(Link& l, short ev) {
    if (l.stage == Link::kConnecting) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(l.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err) return Fatal(l, "connect: " + ErrnoText(err));
      hs::EncodeHello(l.hello, l.out);
      Send(l, hs::kHelloBytes, Link::kAwaitChallenge, hs::kChallengeBytes);
    }
    if ((ev & POLLOUT) || l.out_sent < l.out_len) Flush(l);
    if (!l.closed && (ev & (POLLIN | POLLHUP | POLLERR))) Read(l);
  }

  void Flush(Link& l) {
    while (!l.closed && l.out_sent < l.out_len) {
      const ssize_t w = send(l.fd.get(), l.out + l.out_sent, l.out_len - l.out_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        return Broken(l, ErrnoText(errno));
      }
      l.out_sent += size_t(w);
    }
    if (!l.closed && l.stage == Link::kSendVerdict && l.out_sent == l.out_len) {
      mesh_[size_t(l.peer)].reset(l.fd.release());  // authenticated both ways: in the mesh
      l.closed = true;
    }
  }

  void Read(Link& l) {
    while (!l.closed && l.in_got < l.in_want) {
      const ssize_t r = recv(l.fd.get(), l.in + l.in_got, l.in_want - l.in_got, MSG_DONTWAIT);
      if (r == 0) return Broken(l, "closed the connection");
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        return Broken(l, ErrnoText(errno));
      }
      const size_t before = l.in_got;
      l.in_got += size_t(r);
      // Judge the magic as soon as it is in: a stranger is dropped before it sends more.
      if (before < hs::kMagicBytes && l.in_got >= hs::kMagicBytes && !MagicOk(l)) return;
    }
    if (!l.closed && l.in_got == l.in_want) Complete(l);
  }

  bool MagicOk(Link& l) {
    switch (l.stage) {
      case Link::kAwaitHello:
        if (hs::IsMagic(l.in, hs::kHelloMagic)) return true;
        Drop(l, "sent something other than an equarx hello");
        return false;
      case Link::kAwaitProof:
        if (hs::IsMagic(l.in, hs::kProofMagic)) return true;
        Drop(l, "sent something other than a proof");
        return false;
      case Link::kAwaitChallenge:
        if (hs::IsMagic(l.in, hs::kChallengeMagic)) return true;
        Fatal(l, hs::IsMagic(l.in, hs::kReject) ? RejectedText() : "answered with something other than an equarx challenge");
        return false;
      default:
        return true;
    }
  }

  void Complete(Link& l) {
    l.in_got = 0;
    switch (l.stage) {
      case Link::kAwaitHello: {
        hs::Hello h;
        hs::DecodeHello(l.in, &h);
        const bool ours = h.version == hs::kVersion && h.size == uint32_t(size_) && h.to == uint32_t(rank_) &&
                          h.from > uint32_t(rank_) && h.from < uint32_t(size_);
        if (!ours) return Reject(l, "sent a hello for another group, rank or protocol version");
        if (claimed_[h.from]) return Reject(l, "claimed rank " + std::to_string(h.from) + ", already connected");
        l.hello = h;
        l.peer = int(h.from);
        Status st = hs::MakeChallenge(k_, h, l.nonce_a, l.out);
        if (!st.ok()) return Fatal(l, st.message());
        return Send(l, hs::kChallengeBytes, Link::kAwaitProof, hs::kProofBytes);
      }
      case Link::kAwaitProof:
        if (!hs::CheckProof(k_, l.hello, l.nonce_a, l.in))
          return Reject(l, "claimed rank " + std::to_string(l.peer) + " without knowing the communicator secret");
        if (claimed_[size_t(l.peer)]) return Reject(l, "claimed rank " + std::to_string(l.peer) + ", already connected");
        claimed_[size_t(l.peer)] = true;
        if (o_.encrypt) hs::DeriveDataKeys(k_, hs::Role::kAcceptor, l.hello, l.nonce_a, &keys_[size_t(l.peer)]);
        std::memcpy(l.out, hs::kAccept, hs::kVerdictBytes);
        return Send(l, hs::kVerdictBytes, Link::kSendVerdict, 0);
      case Link::kAwaitChallenge:
        std::memcpy(l.nonce_a, l.in + hs::kMagicBytes, hs::kNonceBytes);
        if (!hs::AnswerChallenge(k_, l.hello, l.in, l.out))
          return Fatal(l, "the listener there did not prove it knows the communicator secret (another process on that address?)");
        return Send(l, hs::kProofBytes, Link::kAwaitVerdict, hs::kVerdictBytes);
      case Link::kAwaitVerdict:
        if (!hs::IsMagic(l.in, hs::kAccept))
          return Fatal(l, hs::IsMagic(l.in, hs::kReject) ? RejectedText() : "sent a malformed verdict");
        if (o_.encrypt) hs::DeriveDataKeys(k_, hs::Role::kConnector, l.hello, l.nonce_a, &keys_[size_t(l.peer)]);
        mesh_[size_t(l.peer)].reset(l.fd.release());
        l.closed = true;
        return;
      default:
        return;
    }
  }

  // Sends the `bytes` now in l.out, then moves to `stage`, which reads `want` bytes.
  void Send(Link& l, size_t bytes, Link::Stage stage, size_t want) {
    l.out_len = bytes;
    l.out_sent = 0;
    l.stage = stage;
    l.in_want = want;
    Flush(l);
  }

  std::string RejectedText() const {
    return "it rejected this rank's proof of the communicator secret (ranks of different communicators?)";
  }

  // The connection broke (closed, reset) before the handshake finished.
  void Broken(Link& l, const std::string& why) {
    if (!l.outgoing) return Drop(l, why);
    // An acceptor sheds connections only under a flood; try again after a pause.
    const int k = std::min(retries_[size_t(l.peer)]++, 5);
    retry_at_[size_t(l.peer)] = Clock::now() + std::chrono::milliseconds(20 << k);
    last_retry_ = "rank " + std::to_string(l.peer) + " (" + l.where + ") " + why + " during the handshake";
    l.closed = true;
  }
  // An accepted connection that is not (or not yet proven to be) one of ours: closed.
  void Drop(Link& l, const std::string& why) {
    ++dropped_;
    last_drop_ = l.where + " " + why;
    l.closed = true;
  }
  // As Drop, telling a well-formed peer why before closing.
  void Reject(Link& l, const std::string& why) {
    (void)!send(l.fd.get(), hs::kReject, hs::kVerdictBytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    Drop(l, why);
  }
  // Our own connection cannot succeed: setup fails on this rank.
  void Fatal(const Link& l, const std::string& why) {
    fatal_ = RemoteError("socket setup: rank " + std::to_string(rank_) + " -> rank " + std::to_string(l.peer) +
                         " (" + l.where + "): " + why);
  }
  void Prune() {
    links_.erase(std::remove_if(links_.begin(), links_.end(), [](const auto& l) { return l->closed; }),
                 links_.end());
  }

  std::string Describe() const {
    std::vector<int> up, down;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || mesh_[size_t(r)].get() >= 0) continue;
      (r < rank_ ? down : up).push_back(r);
    }
    std::string s = "socket setup: rank " + std::to_string(rank_) + " timed out after " +
                    std::to_string(o_.setup_timeout_ms) + " ms";
    if (!up.empty()) s += "; no authenticated connection from rank(s) " + Ranks(up);
    if (!down.empty()) s += "; could not complete the handshake with rank(s) " + Ranks(down);
    if (!last_retry_.empty()) s += " (last: " + last_retry_ + ")";
    if (dropped_) s += "; " + std::to_string(dropped_) + " other connection(s) dropped, last: " + last_drop_;
    return s;
  }

  const int rank_, size_;
  const hs::Secret& k_;
  const std::vector<hs::AddressCard>& cards_;
  const SocketOptions& o_;
  Fd* listener_;
  const Deadline deadline_;
  std::vector<Fd> mesh_;
  std::vector<hs::DataKeys> keys_;  // encrypted mode: each authenticated connection's keys
  std::vector<bool> claimed_;  // an accepted rank proved itself (its verdict may be in flight)
  std::vector<Clock::time_point> retry_at_;
  std::vector<int> retries_;
  std::vector<std::unique_ptr<Link>> links_;
  Status fatal_;
  size_t dropped_ = 0;
  std::string last_drop_, last_retry_;
};

// Gathers one card of type C from every rank; a rank that failed (ok == 0) is reported on
// every rank, so that nobody waits to connect to it.
template <typename C>
Status GatherCards(int rank, const AllGather& allgather, const C& mine, const Status& my_status,
                   uint32_t magic, std::vector<C>* all) {
  all->assign(all->size(), C{});
  EQUARX_RETURN_IF_ERROR(allgather(&mine, sizeof mine, all->data()));
  for (size_t r = 0; r < all->size(); ++r) {
    const C& c = (*all)[r];
    if (c.magic != magic) return Internal("socket setup: garbled card from rank " + std::to_string(r));
    if (!c.ok) {
      if (int(r) == rank) return my_status;
      return RemoteError("socket setup failed on rank " + std::to_string(r) + ": " +
                         std::string(c.error, strnlen(c.error, sizeof c.error)));
    }
  }
  return Status::Ok();
}

// Every rank must agree on encryption; all see the same cards, so all fail alike.
Status CheckMode(const std::vector<hs::IdentityCard>& ids) {
  std::vector<int> on, off;
  for (size_t r = 0; r < ids.size(); ++r) (ids[r].encrypt ? on : off).push_back(int(r));
  if (on.empty() || off.empty()) return Status::Ok();
  return InvalidArgument("socket setup: the ranks disagree on encrypting the data path: rank(s) " + Ranks(on) +
                         " encrypt, rank(s) " + Ranks(off) +
                         " do not (EQUARX_ENCRYPT, or the communicator's encrypt option, must be equal on every rank)");
}

template <typename C>
void SetError(const Status& st, C* card) {
  card->ok = st.ok();
  if (!st.ok()) std::snprintf(card->error, sizeof card->error, "%s", st.message().c_str());
}

}  // namespace

Status CreateSocketTransport(int rank, int size, const AllGather& allgather,
                             const SocketOptions& options, std::unique_ptr<Transport>* out) {
  Mesh mesh;
  EQUARX_RETURN_IF_ERROR(CreateSocketMesh(rank, size, allgather, options, &mesh));
  *out = MakeSocketTransport(rank, std::move(mesh), options);
  return Status::Ok();
}

Status CreateSocketMesh(int rank, int size, const AllGather& allgather, const SocketOptions& options, Mesh* out) {
  if (size < 1 || rank < 0 || rank >= size) return InvalidArgument("socket transport: bad rank or size");
  // 1. Identity and the secret.
  hs::IdentityCard me{};
  me.magic = hs::kIdentityMagic;
  me.encrypt = options.encrypt ? 1 : 0;
  if (options.host_name.empty()) gethostname(me.host, sizeof me.host - 1);
  else std::snprintf(me.host, sizeof me.host, "%s", options.host_name.c_str());
  Status st = OsRandom(me.share, sizeof me.share);
  SetError(st, &me);
  std::vector<hs::IdentityCard> ids(static_cast<size_t>(size));
  Status gathered = GatherCards(rank, allgather, me, st, hs::kIdentityMagic, &ids);
  Wipe(me.share, sizeof me.share);
  hs::Secret secret;
  if (gathered.ok()) {
    std::vector<uint8_t> shares(size_t(size) * hs::kShareBytes);
    for (size_t r = 0; r < ids.size(); ++r)
      std::memcpy(shares.data() + r * hs::kShareBytes, ids[r].share, hs::kShareBytes);
    hs::DeriveSecret(shares.data(), size, options.encrypt, &secret);
    Wipe(shares.data(), shares.size());
  }
  bool all_here = true;
  for (hs::IdentityCard& c : ids) {
    Wipe(c.share, sizeof c.share);
    all_here = all_here && std::strncmp(c.host, me.host, sizeof me.host) == 0;
  }
  EQUARX_RETURN_IF_ERROR(gathered);
  EQUARX_RETURN_IF_ERROR(CheckMode(ids));
  // 2. Listen and publish where.
  hs::AddressCard where{};
  where.magic = hs::kAddressMagic;
  Fd listener;
  st = Listen(options, all_here, &listener, &where);
  SetError(st, &where);
  std::vector<hs::AddressCard> cards(static_cast<size_t>(size));
  EQUARX_RETURN_IF_ERROR(GatherCards(rank, allgather, where, st, hs::kAddressMagic, &cards));
  // 3 and 4. The mesh.
  Deadline deadline = Clock::now() + std::chrono::milliseconds(options.setup_timeout_ms);
  if (options.setup_deadline != Deadline{}) deadline = std::min(deadline, options.setup_deadline);
  Mesh mesh;
  MeshBuilder builder(rank, size, secret, cards, options, &listener, deadline);
  EQUARX_RETURN_IF_ERROR(builder.Run(&mesh));
  for (int fd : mesh.fds) {
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  *out = std::move(mesh);
  return Status::Ok();
}

}  // namespace equarx::transport
