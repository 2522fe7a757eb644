// equarx socket transport — connection setup: listen, exchange addresses through the
// caller's all-gather, connect down and accept up, hand the connected sockets to the data
// loop (socket_transport.cc). See socket_transport.h for the design.
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

#include <cstdio>
#include <cstring>
#include <vector>

#include "transport/socket/socket_transport.h"

namespace equarx::transport {
namespace {

constexpr uint32_t kMagic = 0x45515852;  // "EQXR"

std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

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
  *out = MakeSocketTransport(rank, std::move(raw));
  return Status::Ok();
}

}  // namespace equarx::transport
