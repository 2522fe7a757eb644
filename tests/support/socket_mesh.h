// Threads as the ranks of a socket transport group: the all-gather that CreateSocketTransport
// needs, over a shared board and a barrier, with an optional hook that sees every gathered
// card before any rank goes on (tests use it to learn where ranks listen, or to attack them
// in the middle of setup); and a builder of a whole n-rank mesh on n threads.
#pragma once

#include <barrier>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

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

/// Builds an n-rank socket mesh on n threads (setup deadline 5 s unless `options` changes it).
std::vector<Status> SocketMesh(int n, std::vector<std::unique_ptr<transport::Transport>>* out,
                               const std::function<void(int, transport::SocketOptions*)>& options = nullptr,
                               const GatherHook& hook = nullptr);

}  // namespace equarx::testing
