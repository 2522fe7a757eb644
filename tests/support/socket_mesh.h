// Threads as the ranks of a socket transport group: the all-gather that CreateSocketTransport
// needs, over a shared board and a barrier, with an optional hook that sees every gathered
// card before any rank goes on (tests use it to learn where ranks listen, or to attack them
// in the middle of setup); and a builder of a whole n-rank mesh on n threads.
#pragma once

#include <barrier>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "support/rogue.h"
#include "transport/socket/socket_handshake.h"
#include "transport/shm/host_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/socket/socket_transport.h"

namespace equarx::testing {

/// Runs on every rank's thread after each gather: `all` holds every rank's `bytes` bytes.
/// No rank returns from the gather until every rank's hook has returned.
using GatherHook = std::function<void(int rank, const uint8_t* all, size_t bytes)>;

class ThreadGather {
 public:
  explicit ThreadGather(int n) : n_(n), sync_(n) {}
  /// Rank r's all-gather (each of the n ranks must use its own, on its own thread).
  transport::AllGather For(int r, GatherHook hook = nullptr);

 private:
  int n_;
  std::barrier<> sync_;
  std::vector<uint8_t> board_;
};

/// Builds an n-rank shared-memory group on n threads (one process: every rank maps the same
/// segment).
std::vector<Status> ShmMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                            const std::function<void(int, transport::ShmOptions*)>& options = nullptr);

/// Builds an n-rank host-aware group on n threads (shared-memory rings between ranks of one
/// host, TCP between hosts): `hosts` names rank r's host (its SocketOptions::host_name);
/// `options` may change the rest of rank r's socket options.
std::vector<Status> HostMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                             const std::function<std::string(int)>& hosts,
                             const std::function<void(int, transport::SocketOptions*)>& options = nullptr);

/// Builds an n-rank socket mesh on n threads (setup deadline 5 s unless `options` changes it).
std::vector<Status> SocketMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                               const std::function<void(int, transport::SocketOptions*)>& options = nullptr,
                               const GatherHook& hook = nullptr);

/// A two-rank group where rank 0 is a real socket transport (set up on its own thread) and
/// rank 1 is played by the test, which learns the secret from the gather like any rank: to
/// impersonate a rank without the secret, or to reach rank 0's data loop as an authenticated
/// but hostile peer. Rank 1 says it encrypts when rank 0's options do.
class OneRealRank {
 public:
  explicit OneRealRank(const transport::SocketOptions& rank0_options = Quick());
  ~OneRealRank() { Join(); }
  /// Waits for rank 0's setup to end (it needs rank 1's connection, or its deadline).
  void Join();
  /// Connects as rank 1 with the secret; the socket (blocking) or -1 with a test failure.
  /// `keys`: where to put the connection's data keys (rank 0 encrypts).
  int ConnectAsRank1(transport::handshake::DataKeys* keys = nullptr);
  const rogue::Target& rank0() const { return rank0_; }
  const transport::handshake::Secret& secret() const { return secret_; }
  const Status& status() const { return status_; }
  transport::Transport* transport() { return transport_.get(); }
  static transport::SocketOptions Quick() {
    transport::SocketOptions o;
    o.setup_timeout_ms = 20000;
    return o;
  }

 private:
  ThreadGather gather_;
  std::thread thread_;
  Status status_;
  std::unique_ptr<transport::Transport> transport_;
  transport::handshake::Secret secret_;
  rogue::Target rank0_;
};

}  // namespace equarx::testing
