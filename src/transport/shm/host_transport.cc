// equarx host-aware transport — rings within a host, TCP between hosts (see host_transport.h).
#include "transport/shm/host_transport.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace equarx::transport {
namespace {

constexpr int kSliceMs = 50;  // longest sleep before the rings' liveness checks run again

class HostStreams final : public ByteStreams {
 public:
  HostStreams(Mesh mesh, const SocketOptions& options, std::vector<uint8_t> local, std::unique_ptr<ShmStreams> shm)
      : fds_(mesh.fds), local_(std::move(local)), socket_(MakeSocketStreams(std::move(mesh), options)),
        shm_(std::move(shm)) {
    if (shm_) {
      shm_->OnWake([this](int peer) {
        const int fd = fds_[size_t(peer)];
        const char b = 1;
        if (fd >= 0) (void)send(fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);  // full: a byte is pending anyway
      });
    }
  }
  ~HostStreams() override {
    if (shm_) shm_->OnWake(nullptr);
  }
  int size() const override { return int(fds_.size()); }
  const char* name() const override { return "host (shared-memory and socket)"; }

  Io Write(int peer, const Piece* pieces, int n, size_t* written, std::string* why) override {
    return local_[size_t(peer)] ? shm_->Write(peer, pieces, n, written, why)
                                : socket_->Write(peer, pieces, n, written, why);
  }
  size_t ReadAhead(int peer) const override { return local_[size_t(peer)] ? 0 : socket_->ReadAhead(peer); }
  bool Buffered(int peer) const override { return !local_[size_t(peer)] && socket_->Buffered(peer); }
  Io Read(int peer, void* dst, size_t want, size_t* got, std::string* why) override {
    return local_[size_t(peer)] ? shm_->Read(peer, dst, want, got, why) : socket_->Read(peer, dst, want, got, why);
  }
  void Close(int peer) override {
    if (local_[size_t(peer)]) shm_->Close(peer);
    socket_->Close(peer);
    fds_[size_t(peer)] = -1;
  }

  void Wait(const std::vector<Interest>& interest, int timeout_ms, std::vector<Ready>* ready) override {
    local_in_.clear();
    pfds_.clear();
    who_.clear();
    for (const Interest& in : interest) {
      const int fd = fds_[size_t(in.peer)];
      if (local_[size_t(in.peer)]) {
        local_in_.push_back(in);
        if (fd >= 0) add(fd, POLLIN, in.peer, true);  // its doorbell and its end of stream
      } else if (fd >= 0) {
        add(fd, short((in.read ? POLLIN : POLLRDHUP) | (in.write ? POLLOUT : 0)), in.peer, false);
      }
    }
    const auto until = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
    for (;;) {
      if (shm_ && !local_in_.empty()) shm_->Sleeping(true);
      if (shm_) shm_->Scan(local_in_, ready);
      const auto now = Clock::now();
      int wait_ms = 0;
      if (ready->empty() && now < until)
        wait_ms = int(std::min<int64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1, kSliceMs));
      const int n = pfds_.empty() ? (wait_ms ? poll(nullptr, 0, wait_ms) : 0)
                                  : poll(pfds_.data(), nfds_t(pfds_.size()), wait_ms);
      if (shm_) shm_->Sleeping(false);
      bool rang = false;
      if (n > 0) {
        for (size_t k = 0; k < pfds_.size(); ++k) {
          const short ev = pfds_[k].revents;
          if (!ev) continue;
          if (doorbell_[k]) {
            rang = true;
            Drain(who_[k], ev);
            continue;
          }
          const Interest& in = *std::find_if(interest.begin(), interest.end(),
                                             [&](const Interest& i) { return i.peer == who_[k]; });
          Ready r;
          r.peer = who_[k];
          r.writable = ev & POLLOUT;
          r.readable = ev & POLLIN;
          r.hangup = ev & (POLLRDHUP | POLLHUP | POLLERR);
          r.why = in.read ? "the connection failed" : "the peer closed the connection";
          ready->push_back(std::move(r));
        }
      }
      if (rang && shm_) shm_->Scan(local_in_, ready);
      if (!ready->empty() || Clock::now() >= until) return;
    }
  }

 private:
  void add(int fd, short events, int peer, bool doorbell) {
    pfds_.push_back({fd, events, 0});
    who_.push_back(peer);
    doorbell_.resize(pfds_.size());
    doorbell_[pfds_.size() - 1] = doorbell;
  }
  // Empties a neighbour's doorbell; its end of stream means the neighbour is gone.
  void Drain(int peer, short ev) {
    char buf[256];
    for (;;) {
      const ssize_t r = recv(fds_[size_t(peer)], buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || (ev & (POLLHUP | POLLERR)))
        shm_->MarkGone(peer);
      return;
    }
  }

  std::vector<int> fds_;  // a copy: socket_ owns and closes them
  std::vector<uint8_t> local_;
  std::unique_ptr<ByteStreams> socket_;
  std::unique_ptr<ShmStreams> shm_;
  std::vector<Interest> local_in_;
  std::vector<pollfd> pfds_;
  std::vector<int> who_;
  std::vector<uint8_t> doorbell_;
};

// The host of a rank: its host name (or the options' stand-in) and the boot id.
struct HostCard {
  uint32_t magic;
  char host[64];
  char boot[40];
};
constexpr uint32_t kHostMagic = 0x31485145;  // "EQH1"

}  // namespace

Status CreateHostTransport(int rank, int size, const AllGather& allgather, const SocketOptions& socket,
                           const ShmOptions& shm, std::unique_ptr<Transport>* out) {
  Mesh mesh;
  EQUARX_RETURN_IF_ERROR(CreateSocketMesh(rank, size, allgather, socket, &mesh));
  auto close_all = [&] {
    for (int fd : mesh.fds)
      if (fd >= 0) close(fd);
  };
  HostCard me{};
  me.magic = kHostMagic;
  if (socket.host_name.empty()) gethostname(me.host, sizeof me.host - 1);
  else std::snprintf(me.host, sizeof me.host, "%s", socket.host_name.c_str());
  BootId(me.boot, sizeof me.boot);
  std::vector<HostCard> cards(static_cast<size_t>(size));
  Status st = allgather(&me, sizeof me, cards.data());
  if (!st.ok()) {
    close_all();
    return st;
  }
  std::vector<int> members, host_of(static_cast<size_t>(size));
  std::vector<uint8_t> local(static_cast<size_t>(size), 0);
  auto same_host = [](const HostCard& a, const HostCard& b) {
    return std::strncmp(a.host, b.host, sizeof a.host) == 0 && std::strncmp(a.boot, b.boot, sizeof a.boot) == 0;
  };
  for (int r = 0; r < size; ++r) {
    const HostCard& c = cards[size_t(r)];
    if (c.magic != kHostMagic) {
      close_all();
      return Internal("host set-up: garbled card from rank " + std::to_string(r));
    }
    host_of[size_t(r)] = r;  // the first rank with the same host
    for (int q = 0; q < r; ++q)
      if (same_host(cards[size_t(q)], c)) {
        host_of[size_t(r)] = host_of[size_t(q)];
        break;
      }
    if (same_host(c, me)) {
      members.push_back(r);
      local[size_t(r)] = r != rank;
    }
  }
  // Every host sets up its segment at once, over the one all-gather: each rank keeps the cards
  // of its own host's ranks.
  const AllGather host_gather = [&](const void* mine, size_t bytes, void* all) -> Status {
    std::vector<uint8_t> every(size_t(size) * bytes);
    EQUARX_RETURN_IF_ERROR(allgather(mine, bytes, every.data()));
    for (size_t i = 0; i < members.size(); ++i)
      std::memcpy(static_cast<uint8_t*>(all) + i * bytes, every.data() + size_t(members[i]) * bytes, bytes);
    return Status::Ok();
  };
  std::unique_ptr<ShmStreams> streams;
  st = CreateShmStreams(rank, size, members, host_gather, shm, &streams);
  if (!st.ok()) {
    close_all();
    return st;
  }
  if (members.size() == 1) streams.reset();  // alone on this host: TCP only
  StreamLimits limits;
  limits.max_message_bytes = std::min(socket.max_message_bytes, shm.max_message_bytes);
  limits.max_unexpected_bytes = std::min(socket.max_unexpected_bytes, shm.max_unexpected_bytes);
  *out = MakeStreamTransport(
      rank, std::make_unique<HostStreams>(std::move(mesh), socket, std::move(local), std::move(streams)), limits);
  (*out)->SetHosts(int(members.size()), RanksPerHost(host_of));
  return Status::Ok();
}

}  // namespace equarx::transport
