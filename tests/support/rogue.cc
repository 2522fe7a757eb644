// The rogue client (see rogue.h).
#include "support/rogue.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace equarx::testing::rogue {
namespace {

namespace hs = transport::handshake;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Blocking I/O with a time limit; false on timeout, error or end of stream.
bool SendAll(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n) {
    const ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= size_t(w);
  }
  return true;
}
bool RecvAll(int fd, void* p, size_t n, int ms) {
  auto* b = static_cast<uint8_t*>(p);
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (n) {
    pollfd f{fd, POLLIN, 0};
    const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    if (left <= 0 || poll(&f, 1, left) <= 0) return false;
    const ssize_t r = recv(fd, b, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= size_t(r);
  }
  return true;
}

}  // namespace

const char* AttackName(Attack a) {
  switch (a) {
    case Attack::kWrongSecret: return "wrong-secret";
    case Attack::kOldHello: return "old-hello";
    case Attack::kSilent: return "silent";
    case Attack::kGarbage: return "garbage";
    case Attack::kClaimThenSilent: return "claim-then-silent";
  }
  return "?";
}

std::vector<Attack> AllAttacks() {
  return {Attack::kWrongSecret, Attack::kOldHello, Attack::kSilent, Attack::kGarbage, Attack::kClaimThenSilent};
}

std::string TargetName(const Target& t) {
  in_addr a{t.addr};
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a, text, sizeof text);
  return "rank " + std::to_string(t.rank) + " at " + text + ":" + std::to_string(ntohs(t.port));
}

int TryConnect(const Target& t, int* fd) {
  *fd = -1;
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = t.addr;
  a.sin_port = t.port;
  timeval tv{5, 0};  // a local listener answers at once; never wait long
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int err = errno;
    close(s);
    return err;
  }
  *fd = s;
  return 0;
}

Connection::~Connection() {
  if (fd_ >= 0) close(fd_);
}

bool Connection::Start() {
  const int err = TryConnect(target_, &fd_);
  if (err) {
    detail_ = std::string("connect failed: ") + std::strerror(err);
    return false;
  }
  hello_.size = uint32_t(size_);
  hello_.from = uint32_t(target_.rank + 1);  // a rank this one accepts from (if any)
  hello_.to = uint32_t(target_.rank);
  (void)transport::OsRandom(hello_.nonce_c, sizeof hello_.nonce_c);
  switch (attack_) {
    case Attack::kWrongSecret:
    case Attack::kClaimThenSilent: {
      uint8_t m[hs::kHelloBytes];
      hs::EncodeHello(hello_, m);
      return SendAll(fd_, m, sizeof m);
    }
    case Attack::kOldHello: {
      const uint32_t old[3] = {0x45515852, hello_.from, hello_.size};
      return SendAll(fd_, old, sizeof old);
    }
    case Attack::kGarbage: {
      uint8_t junk[4096];
      (void)transport::OsRandom(junk, sizeof junk);
      return SendAll(fd_, junk, sizeof junk);
    }
    case Attack::kSilent:
      return true;
  }
  return false;
}

bool Connection::Watch(int ms) {
  if (fd_ < 0) return false;
  const auto t0 = Clock::now();
  uint8_t buf[256];
  std::string got;
  bool proved = false;
  for (;;) {
    const int left = ms - int(MsSince(t0));
    pollfd f{fd_, POLLIN, 0};
    if (left <= 0 || poll(&f, 1, left) <= 0) {
      detail_ = seen_ + "still open after " + std::to_string(ms) + " ms";
      return false;
    }
    const ssize_t r = recv(fd_, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      detail_ = seen_ + (r == 0 ? "closed" : std::string("reset (") + std::strerror(errno) + ")") +
                " after " + std::to_string(int(MsSince(t0))) + " ms of watching";
      return true;
    }
    got.append(reinterpret_cast<const char*>(buf), size_t(r));
    if (got.size() >= hs::kChallengeBytes && !proved &&
        hs::IsMagic(reinterpret_cast<const uint8_t*>(got.data()), hs::kChallengeMagic)) {
      seen_ += "got a challenge; ";
      proved = true;
      if (attack_ == Attack::kWrongSecret) {
        hs::Secret wrong;
        (void)transport::OsRandom(wrong.bytes, sizeof wrong.bytes);
        const auto mac = hs::Mac(wrong, hs::Role::kConnector, hello_,
                                 reinterpret_cast<const uint8_t*>(got.data()) + 4);
        uint8_t proof[hs::kProofBytes];
        std::memcpy(proof, hs::kProofMagic, 4);
        std::memcpy(proof + 4, mac.data(), mac.size());
        seen_ += SendAll(fd_, proof, sizeof proof) ? "sent a wrong proof; " : "could not send the proof; ";
      }
      got.erase(0, hs::kChallengeBytes);
    }
    if (got.size() >= hs::kVerdictBytes && (proved || attack_ != Attack::kWrongSecret)) {
      const auto* v = reinterpret_cast<const uint8_t*>(got.data());
      if (hs::IsMagic(v, hs::kReject)) seen_ += "rejected (EQNO); ";
      else if (hs::IsMagic(v, hs::kAccept)) seen_ += "ACCEPTED (EQOK); ";
      if (hs::IsMagic(v, hs::kReject) || hs::IsMagic(v, hs::kAccept)) got.erase(0, hs::kVerdictBytes);
    }
  }
}

bool AuthenticatedConnect(const Target& t, const hs::Secret& k, int group_size, int from, int* fd,
                          std::string* why, hs::DataKeys* keys) {
  const int err = TryConnect(t, fd);
  if (err) {
    *why = std::string("connect: ") + std::strerror(err);
    return false;
  }
  hs::Hello h;
  h.size = uint32_t(group_size);
  h.from = uint32_t(from);
  h.to = uint32_t(t.rank);
  (void)transport::OsRandom(h.nonce_c, sizeof h.nonce_c);
  uint8_t hello[hs::kHelloBytes], challenge[hs::kChallengeBytes], proof[hs::kProofBytes], verdict[4];
  hs::EncodeHello(h, hello);
  bool ok = SendAll(*fd, hello, sizeof hello) && RecvAll(*fd, challenge, sizeof challenge, 5000);
  if (ok && !hs::AnswerChallenge(k, h, challenge, proof)) {
    *why = "the rank's challenge did not verify";
    ok = false;
  } else if (ok) {
    ok = SendAll(*fd, proof, sizeof proof) && RecvAll(*fd, verdict, sizeof verdict, 5000);
    if (ok && !hs::IsMagic(verdict, hs::kAccept)) {
      *why = "the rank rejected the proof";
      ok = false;
    }
    if (ok && keys) hs::DeriveDataKeys(k, hs::Role::kConnector, h, challenge + hs::kMagicBytes, keys);
  }
  if (!ok) {
    if (why->empty()) *why = "the handshake broke off";
    close(*fd);
    *fd = -1;
  }
  return ok;
}

}  // namespace equarx::testing::rogue
