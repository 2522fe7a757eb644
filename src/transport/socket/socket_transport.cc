// equarx socket transport (see socket_transport.h for the design).
#include "transport/socket/socket_transport.h"

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
#include <cstring>
#include <cstdio>
#include <deque>
#include <list>
#include <new>
#include <vector>

namespace equarx::transport {
namespace {

constexpr uint32_t kMagic = 0x45515852;  // "EQXR"
constexpr size_t kHeaderBytes = 16;      // {u64 tag, u64 length}, host byte order

std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

// ---- Requests ----
enum class Kind : uint8_t { kSend, kRecv };
enum class Outcome : uint8_t { kPending, kOk, kLength, kPeerLost, kCancelled };

// Lives inside Request::state. A receive is linked into its peer's `posted` list (or claims an
// unexpected message); a send is referenced by an Outgoing in its peer's send queue.
struct Entry {
  Entry* prev = nullptr;
  Entry* next = nullptr;
  Kind kind = Kind::kSend;
  Outcome outcome = Outcome::kPending;
  int peer = 0;
  uint64_t tag = 0;
  uint8_t* buf = nullptr;
  size_t bytes = 0;
  size_t got = 0;  // a receive: length of the message that matched it
};
static_assert(sizeof(Entry) <= sizeof(Request::state), "Request storage too small");

Entry* AsEntry(Request* r) { return std::launder(reinterpret_cast<Entry*>(r->state)); }

// A message waiting to go out: header then payload. `entry` is null once the caller cancelled
// it mid-flight (then the rest of the payload lives in `owned`).
struct Outgoing {
  Entry* entry = nullptr;
  uint8_t header[kHeaderBytes];
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  size_t sent = 0;  // header and payload bytes written so far
  std::vector<uint8_t> owned;
};

// A message that arrived before its receive was posted.
struct Unexpected {
  uint64_t tag = 0;
  std::vector<uint8_t> data;
  bool complete = false;
  Entry* claimed = nullptr;  // the receive that takes it when it completes
};

struct Peer {
  int fd = -1;
  bool lost = false;
  std::string why;  // why the connection was lost
  std::deque<Outgoing> sendq;
  Entry* posted_head = nullptr;  // receives in posting order
  Entry* posted_tail = nullptr;
  std::list<Unexpected> unexpected;  // a list: `into` must survive erasing others
  // The message being read: header, then payload into `target` (a posted receive's buffer),
  // an Unexpected's data, or nowhere (a cancelled or mis-sized receive: discard).
  uint8_t header[kHeaderBytes];
  size_t header_got = 0;
  bool in_payload = false;
  uint64_t length = 0, payload_got = 0;
  Entry* target = nullptr;
  Unexpected* into = nullptr;

  void Post(Entry* e) {
    e->prev = posted_tail;
    e->next = nullptr;
    (posted_tail ? posted_tail->next : posted_head) = e;
    posted_tail = e;
  }
  void Unlink(Entry* e) {
    (e->prev ? e->prev->next : posted_head) = e->next;
    (e->next ? e->next->prev : posted_tail) = e->prev;
    e->prev = e->next = nullptr;
  }
  Entry* TakePosted(uint64_t tag) {
    for (Entry* e = posted_head; e; e = e->next)
      if (e->tag == tag) {
        Unlink(e);
        return e;
      }
    return nullptr;
  }
  bool IsPosted(const Entry* e) const {
    for (const Entry* p = posted_head; p; p = p->next)
      if (p == e) return true;
    return false;
  }
};

void Finish(Entry* e, Outcome o) {
  if (e && e->outcome == Outcome::kPending) e->outcome = o;
}

// Delivers a complete unexpected message to the receive that claimed (or now matches) it.
void Deliver(const Unexpected& u, Entry* e) {
  e->got = u.data.size();
  if (u.data.size() != e->bytes) return Finish(e, Outcome::kLength);
  if (e->bytes) std::memcpy(e->buf, u.data.data(), e->bytes);
  Finish(e, Outcome::kOk);
}

class SocketTransport final : public Transport {
 public:
  SocketTransport(int rank, std::vector<int> fds) : rank_(rank), peers_(fds.size()) {
    for (size_t p = 0; p < fds.size(); ++p) peers_[p].fd = fds[p];
  }
  ~SocketTransport() override {
    for (Peer& p : peers_)
      if (p.fd >= 0) close(p.fd);
  }

  int rank() const override { return rank_; }
  int size() const override { return int(peers_.size()); }

  Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) override {
    EQUARX_RETURN_IF_ERROR(CheckPeer(peer, "send to"));
    Entry* e = Init(req, Kind::kSend, peer, tag, const_cast<void*>(buf), bytes);
    bytes_sent_ += bytes;
    if (peer == rank_) return SelfMatch(e);
    Peer& p = peers_[size_t(peer)];
    if (p.lost) {
      Finish(e, Outcome::kPeerLost);
      return Status::Ok();
    }
    Outgoing& o = p.sendq.emplace_back();
    o.entry = e;
    const uint64_t h[2] = {tag, uint64_t(bytes)};
    std::memcpy(o.header, h, kHeaderBytes);
    o.data = static_cast<const uint8_t*>(buf);
    o.bytes = bytes;
    if (p.sendq.size() == 1) Write(p);  // start at once: the kernel moves it from here on
    return Status::Ok();
  }

  Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) override {
    EQUARX_RETURN_IF_ERROR(CheckPeer(peer, "receive from"));
    Entry* e = Init(req, Kind::kRecv, peer, tag, buf, bytes);
    if (peer == rank_) return SelfMatch(e);
    Peer& p = peers_[size_t(peer)];
    for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it) {
      if (it->tag != tag || it->claimed) continue;
      if (!it->complete) {
        it->claimed = e;  // still arriving: delivered when its last byte is in
        return Status::Ok();
      }
      Deliver(*it, e);
      p.unexpected.erase(it);
      return Status::Ok();
    }
    if (p.lost) {
      Finish(e, Outcome::kPeerLost);
      return Status::Ok();
    }
    p.Post(e);
    return Status::Ok();
  }

  Status Wait(Request* req, Deadline deadline) override {
    Entry* e = AsEntry(req);
    while (e->outcome == Outcome::kPending) {
      const auto now = Clock::now();
      if (now >= deadline)
        return WaitTimedOut(e->kind == Kind::kSend, e->peer);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      Progress(int(std::min<int64_t>(left.count() + 1, 1000)));
    }
    return ResultOf(e);
  }

  bool Test(Request* req, Status* status) override {
    Entry* e = AsEntry(req);
    if (e->outcome == Outcome::kPending) Progress(0);
    if (e->outcome == Outcome::kPending) return false;
    *status = ResultOf(e);
    return true;
  }

  void Cancel(Request* req) override {
    Entry* e = AsEntry(req);
    if (e->outcome != Outcome::kPending) return;
    e->outcome = Outcome::kCancelled;
    if (e->peer == rank_) {
      self_.erase(std::remove(self_.begin(), self_.end(), e), self_.end());
      return;
    }
    Peer& p = peers_[size_t(e->peer)];
    if (e->kind == Kind::kRecv) {
      if (p.target == e) p.target = nullptr;  // the rest of that message is discarded
      for (Unexpected& u : p.unexpected)
        if (u.claimed == e) u.claimed = nullptr;  // stays queued for a later receive
      if (p.IsPosted(e)) p.Unlink(e);
      return;
    }
    for (auto it = p.sendq.begin(); it != p.sendq.end(); ++it) {
      if (it->entry != e) continue;
      if (it->sent == 0) {
        p.sendq.erase(it);  // nothing of it on the wire yet
      } else {
        // Partly written: the stream must carry the rest, from a copy of our own.
        const size_t done = it->sent > kHeaderBytes ? it->sent - kHeaderBytes : 0;
        it->owned.assign(it->data + done, it->data + it->bytes);
        it->data = it->owned.data();
        it->bytes -= done;
        it->sent -= done;
        it->entry = nullptr;
      }
      return;
    }
  }

  uint64_t bytes_sent() const override { return bytes_sent_; }

 private:
  Status CheckPeer(int peer, const char* what) const {
    if (peer < 0 || peer >= size()) return InvalidArgument(std::string(what) + " rank out of range");
    return Status::Ok();
  }
  Entry* Init(Request* req, Kind kind, int peer, uint64_t tag, void* buf, size_t bytes) {
    Entry* e = new (req->state) Entry();
    e->kind = kind;
    e->peer = peer;
    e->tag = tag;
    e->buf = static_cast<uint8_t*>(buf);
    e->bytes = bytes;
    return e;
  }
  Status ResultOf(const Entry* e) const {
    switch (e->outcome) {
      case Outcome::kOk: return Status::Ok();
      case Outcome::kLength:
        return LengthMismatch(e->peer, e->got, e->bytes);
      case Outcome::kPeerLost:
        return RemoteError("connection to rank " + std::to_string(e->peer) + " lost: " +
                           peers_[size_t(e->peer)].why);
      default: return Internal("request was cancelled");
    }
  }

  // Messages to ourselves: matched in memory, never touching a socket.
  Status SelfMatch(Entry* e) {
    for (auto it = self_.begin(); it != self_.end(); ++it) {
      Entry* o = *it;
      if (o->kind == e->kind || o->tag != e->tag) continue;
      self_.erase(it);
      if (e->kind == Kind::kSend) MatchSelf(e, o); else MatchSelf(o, e);
      return Status::Ok();
    }
    self_.push_back(e);
    return Status::Ok();
  }
  void MatchSelf(Entry* s, Entry* r) {
    r->got = s->bytes;
    if (s->bytes != r->bytes) {
      Finish(r, Outcome::kLength);
      Finish(s, Outcome::kLength);
      return;
    }
    if (s->bytes) std::memcpy(r->buf, s->buf, s->bytes);
    Finish(r, Outcome::kOk);
    Finish(s, Outcome::kOk);
  }

  // Marks the connection dead: every request still tied to it fails.
  void Lose(Peer& p, std::string why) {
    if (p.lost) return;
    p.lost = true;
    p.why = std::move(why);
    for (Outgoing& o : p.sendq) Finish(o.entry, Outcome::kPeerLost);
    p.sendq.clear();
    while (Entry* e = p.posted_head) {
      p.Unlink(e);
      Finish(e, Outcome::kPeerLost);
    }
    Finish(p.target, Outcome::kPeerLost);
    p.target = nullptr;
    for (auto it = p.unexpected.begin(); it != p.unexpected.end();) {
      if (it->complete) { ++it; continue; }  // whole messages can still be received
      Finish(it->claimed, Outcome::kPeerLost);
      it = p.unexpected.erase(it);
    }
    p.into = nullptr;
    close(p.fd);
    p.fd = -1;
  }

  void Write(Peer& p) {
    while (!p.lost && !p.sendq.empty()) {
      Outgoing& o = p.sendq.front();
      iovec iov[2];
      int n = 0;
      if (o.sent < kHeaderBytes) iov[n++] = {o.header + o.sent, kHeaderBytes - o.sent};
      const size_t done = o.sent > kHeaderBytes ? o.sent - kHeaderBytes : 0;
      if (o.bytes > done) iov[n++] = {const_cast<uint8_t*>(o.data) + done, o.bytes - done};
      ssize_t w = 0;
      if (n > 0) {
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = size_t(n);
        w = sendmsg(p.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) return;
          if (errno == EINTR) continue;
          return Lose(p, "send failed: " + ErrnoText(errno));
        }
      }
      o.sent += size_t(w);
      if (o.sent < kHeaderBytes + o.bytes) continue;
      Finish(o.entry, Outcome::kOk);
      p.sendq.pop_front();
    }
  }

  // Reads whatever the socket holds, message by message.
  void Read(Peer& p) {
    while (!p.lost) {
      uint8_t* dst;
      size_t want;
      if (!p.in_payload) {
        dst = p.header + p.header_got;
        want = kHeaderBytes - p.header_got;
      } else if (p.target) {
        dst = p.target->buf + p.payload_got;
        want = size_t(p.length - p.payload_got);
      } else if (p.into) {
        dst = p.into->data.data() + p.payload_got;
        want = size_t(p.length - p.payload_got);
      } else {
        discard_.resize(std::max<size_t>(discard_.size(), 1 << 16));
        dst = discard_.data();
        want = size_t(std::min<uint64_t>(p.length - p.payload_got, discard_.size()));
      }
      ssize_t r = want ? recv(p.fd, dst, want, MSG_DONTWAIT) : 0;
      if (want && r == 0) return Lose(p, "the peer closed the connection");
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR) continue;
        return Lose(p, "receive failed: " + ErrnoText(errno));
      }
      if (!p.in_payload) {
        p.header_got += size_t(r);
        if (p.header_got == kHeaderBytes) StartPayload(p);
      } else {
        p.payload_got += uint64_t(r);
      }
      if (p.in_payload && p.payload_got == p.length) EndPayload(p);
    }
  }
  void StartPayload(Peer& p) {
    uint64_t h[2];
    std::memcpy(h, p.header, kHeaderBytes);
    p.header_got = 0;
    p.in_payload = true;
    p.length = h[1];
    p.payload_got = 0;
    p.target = p.TakePosted(h[0]);
    p.into = nullptr;
    if (p.target) {
      p.target->got = size_t(p.length);
      if (p.length != p.target->bytes) {  // wrong size: report it, drop the payload
        Finish(p.target, Outcome::kLength);
        p.target = nullptr;
      }
      return;
    }
    Unexpected& u = p.unexpected.emplace_back();
    u.tag = h[0];
    u.data.resize(size_t(p.length));
    p.into = &u;
  }
  void EndPayload(Peer& p) {
    p.in_payload = false;
    if (p.target) Finish(p.target, Outcome::kOk);
    if (p.into) {
      p.into->complete = true;
      if (Entry* e = p.into->claimed) {
        Deliver(*p.into, e);
        // The claimed message is the newest unexpected one or an older still-arriving one;
        // find and drop it.
        for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it)
          if (&*it == p.into) {
            p.unexpected.erase(it);
            break;
          }
      }
    }
    p.target = nullptr;
    p.into = nullptr;
  }

  // One round of progress: writes and reads on every connection that is ready, waiting up to
  // `timeout_ms` for one to become ready.
  void Progress(int timeout_ms) {
    fds_.clear();
    index_.clear();
    for (size_t i = 0; i < peers_.size(); ++i) {
      Peer& p = peers_[i];
      if (p.lost || p.fd < 0) continue;
      fds_.push_back({p.fd, short(POLLIN | (p.sendq.empty() ? 0 : POLLOUT)), 0});
      index_.push_back(i);
    }
    if (fds_.empty()) return;
    int n = poll(fds_.data(), nfds_t(fds_.size()), timeout_ms);
    if (n <= 0) return;
    for (size_t k = 0; k < fds_.size(); ++k) {
      const short ev = fds_[k].revents;
      if (!ev) continue;
      Peer& p = peers_[index_[k]];
      if (ev & POLLOUT) Write(p);
      if (ev & (POLLIN | POLLHUP | POLLERR)) Read(p);
      if (!p.lost && (ev & (POLLHUP | POLLERR)) && !(ev & POLLIN))
        Lose(p, "the connection failed");
    }
  }

  int rank_;
  std::vector<Peer> peers_;
  std::vector<Entry*> self_;  // unmatched messages to/from ourselves, in posting order
  std::vector<pollfd> fds_;
  std::vector<size_t> index_;
  std::vector<uint8_t> discard_;
  uint64_t bytes_sent_ = 0;
};

// ---- Setup ----

struct Card {  // what each rank publishes
  uint32_t magic;
  uint32_t ok;
  uint32_t addr;  // IPv4, network byte order
  uint16_t port;  // network byte order
  uint16_t pad;
  char host[64];
  char error[112];
};
static_assert(sizeof(Card) == 192, "Card layout");

struct Hello {
  uint32_t magic;
  int32_t rank;
  int32_t size;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { if (fd_ >= 0) close(fd_); }
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

bool WaitFd(int fd, short events, Deadline deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return false;
    pollfd f{fd, events, 0};
    int n = poll(&f, 1, int(left.count()) + 1);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

Status ReadAll(int fd, void* buf, size_t n, Deadline deadline) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n) {
    if (!WaitFd(fd, POLLIN, deadline)) return Timeout("no hello from a connecting rank");
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r == 0) return RemoteError("a connecting rank closed its connection during setup");
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return RemoteError("reading a hello: " + ErrnoText(errno));
    }
    p += r;
    n -= size_t(r);
  }
  return Status::Ok();
}

void Tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Listens on an ephemeral port and fills in this rank's card.
Status Listen(const SocketOptions& o, Fd* listener, Card* card) {
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) return Internal("socket: " + ErrnoText(errno));
  int one = 1;
  setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  if (bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Internal("bind: " + ErrnoText(errno));
  if (listen(s.get(), 512) != 0) return Internal("listen: " + ErrnoText(errno));
  socklen_t len = sizeof a;
  getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  card->port = a.sin_port;
  EQUARX_RETURN_IF_ERROR(FindAddress(o.interface, &card->addr));
  listener->reset(s.release());
  return Status::Ok();
}

Status Connect(const Card& to, bool same_host, int my_rank, int size, Deadline deadline, int* fd) {
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.get() < 0) return Internal("socket: " + ErrnoText(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = same_host ? htonl(INADDR_LOOPBACK) : to.addr;
  a.sin_port = to.port;
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  const std::string where = std::string(text) + ":" + std::to_string(ntohs(a.sin_port));
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) return RemoteError("connect to " + where + ": " + ErrnoText(errno));
    if (!WaitFd(s.get(), POLLOUT, deadline)) return Timeout("connect to " + where + " timed out");
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) return RemoteError("connect to " + where + ": " + ErrnoText(err));
  }
  const Hello h{kMagic, my_rank, size};
  size_t off = 0;
  while (off < sizeof h) {
    if (!WaitFd(s.get(), POLLOUT, deadline)) return Timeout("hello to " + where + " timed out");
    ssize_t w = send(s.get(), reinterpret_cast<const char*>(&h) + off, sizeof h - off, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return RemoteError("hello to " + where + ": " + ErrnoText(errno));
    }
    off += size_t(w);
  }
  *fd = s.release();
  return Status::Ok();
}

}  // namespace

Status CreateSocketTransport(int rank, int size, const AllGather& allgather,
                             const SocketOptions& options, std::unique_ptr<Transport>* out) {
  if (size < 1 || rank < 0 || rank >= size) return InvalidArgument("socket transport: bad rank or size");
  Card mine{};
  mine.magic = kMagic;
  gethostname(mine.host, sizeof mine.host - 1);
  Fd listener;
  Status st = Listen(options, &listener, &mine);
  mine.ok = st.ok();
  if (!st.ok()) std::snprintf(mine.error, sizeof mine.error, "%s", st.message().c_str());
  // Publish even on failure, so that every rank learns of it instead of waiting to connect.
  std::vector<Card> cards(static_cast<size_t>(size));
  EQUARX_RETURN_IF_ERROR(allgather(&mine, sizeof mine, cards.data()));
  for (int r = 0; r < size; ++r) {
    const Card& c = cards[size_t(r)];
    if (c.magic != kMagic) return Internal("socket setup: garbled address card from rank " + std::to_string(r));
    if (!c.ok) {
      if (r == rank) return st;
      return RemoteError("socket setup failed on rank " + std::to_string(r) + ": " + c.error);
    }
  }
  const Deadline deadline = Clock::now() + std::chrono::milliseconds(options.setup_timeout_ms);
  std::vector<Fd> fds(static_cast<size_t>(size));
  for (int r = 0; r < rank; ++r) {  // connect down
    const bool same = std::strncmp(cards[size_t(r)].host, mine.host, sizeof mine.host) == 0;
    int fd = -1;
    Status c = Connect(cards[size_t(r)], same, rank, size, deadline, &fd);
    if (!c.ok()) return RemoteError("rank " + std::to_string(rank) + " -> rank " + std::to_string(r) + ": " + c.message());
    fds[size_t(r)].reset(fd);
  }
  for (int pending = size - 1 - rank; pending > 0;) {  // accept up
    if (!WaitFd(listener.get(), POLLIN, deadline))
      return Timeout("socket setup: " + std::to_string(pending) + " higher ranks never connected to rank " + std::to_string(rank));
    Fd s(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (s.get() < 0) {
      if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) continue;
      return Internal("accept: " + ErrnoText(errno));
    }
    Hello h{};
    EQUARX_RETURN_IF_ERROR(ReadAll(s.get(), &h, sizeof h, deadline));
    if (h.magic != kMagic || h.size != size || h.rank <= rank || h.rank >= size ||
        fds[size_t(h.rank)].get() >= 0)
      continue;  // not one of ours (a stray connection): drop it
    fds[size_t(h.rank)].reset(s.release());
    --pending;
  }
  std::vector<int> raw(size_t(size), -1);
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    Tune(fds[size_t(r)].get());
    raw[size_t(r)] = fds[size_t(r)].release();
  }
  *out = std::make_unique<SocketTransport>(rank, std::move(raw));
  return Status::Ok();
}

}  // namespace equarx::transport
