// equarx socket transport — the byte streams of an established mesh: one non-blocking TCP
// connection per peer, written with sendmsg, read with recv, waited on with poll(). The data
// loop above them (framing, matching, failures) is the stream transport's
// (src/transport/stream/); connection setup lives in socket_setup.cc, the record layer of the
// encrypted mode in encrypted_streams.cc. See socket_transport.h.
#include "transport/socket/socket_transport.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "transport/stream/stream_transport.h"

namespace equarx::transport {
namespace {

std::string ErrnoText(int err) { return std::string(std::strerror(err)); }

constexpr size_t kReadAhead = size_t(64) << 10;  // a receive system call takes up to this much

class SocketStreams final : public ByteStreams {
 public:
  explicit SocketStreams(std::vector<int> fds) : fds_(std::move(fds)) {}
  ~SocketStreams() override {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
  }
  int size() const override { return int(fds_.size()); }
  const char* name() const override { return "socket"; }

  Io Write(int peer, const Piece* pieces, int n, size_t* written, std::string* why) override {
    iovec iov[kMaxPieces];
    const int k = n < kMaxPieces ? n : kMaxPieces;
    for (int i = 0; i < k; ++i) iov[i] = {const_cast<uint8_t*>(pieces[i].data), pieces[i].bytes};
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = size_t(k);
    for (;;) {
      const ssize_t w = sendmsg(fds_[size_t(peer)], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w >= 0) {
        *written = size_t(w);
        return w > 0 ? Io::kOk : Io::kWouldBlock;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWouldBlock;
      *why = "send failed: " + ErrnoText(errno);
      return Io::kClosed;
    }
  }

  Io Read(int peer, void* dst, size_t want, size_t* got, std::string* why) override {
    for (;;) {
      const ssize_t r = recv(fds_[size_t(peer)], dst, want, MSG_DONTWAIT);
      if (r > 0) {
        *got = size_t(r);
        return Io::kOk;
      }
      if (r == 0) {
        *why = "the peer closed the connection";
        return Io::kClosed;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWouldBlock;
      *why = "receive failed: " + ErrnoText(errno);
      return Io::kClosed;
    }
  }

  void Wait(const std::vector<Interest>& interest, int timeout_ms, std::vector<Ready>* ready) override {
    pfds_.clear();
    for (const Interest& in : interest) {
      // A peer not being read is still watched for its hang-up.
      const short ev = short((in.read ? POLLIN : POLLRDHUP) | (in.write ? POLLOUT : 0));
      pfds_.push_back({fds_[size_t(in.peer)], ev, 0});
    }
    if (pfds_.empty()) {  // nothing to wait on but the deadline
      poll(nullptr, 0, timeout_ms);
      return;
    }
    if (poll(pfds_.data(), nfds_t(pfds_.size()), timeout_ms) <= 0) return;
    for (size_t k = 0; k < pfds_.size(); ++k) {
      const short ev = pfds_[k].revents;
      if (!ev) continue;
      Ready r;
      r.peer = interest[k].peer;
      r.writable = ev & POLLOUT;
      r.readable = ev & POLLIN;
      r.hangup = ev & (POLLRDHUP | POLLHUP | POLLERR);
      // A hang-up with data still to read is seen by Read (end of stream); without, it is
      // a failed connection, or one closed while its next message waited for a receive.
      r.why = interest[k].read ? "the connection failed" : "the peer closed the connection";
      ready->push_back(std::move(r));
    }
  }

  void Close(int peer) override {
    int& fd = fds_[size_t(peer)];
    if (fd >= 0) close(fd);
    fd = -1;
  }

  size_t ReadAhead(int) const override { return kReadAhead; }

 private:
  std::vector<int> fds_;
  std::vector<pollfd> pfds_;
};

}  // namespace

std::unique_ptr<ByteStreams> MakeSocketStreams(Mesh mesh, const SocketOptions& options) {
  auto plain = std::make_unique<SocketStreams>(std::move(mesh.fds));
  if (mesh.keys.empty()) return plain;
  return MakeEncryptedStreams(std::move(plain), mesh.keys, options.records);
}

std::unique_ptr<Transport> MakeSocketTransport(int rank, Mesh mesh, const SocketOptions& options) {
  StreamLimits limits;
  limits.max_message_bytes = options.max_message_bytes;
  limits.max_unexpected_bytes = options.max_unexpected_bytes;
  return MakeStreamTransport(rank, MakeSocketStreams(std::move(mesh), options), limits);
}

}  // namespace equarx::transport
