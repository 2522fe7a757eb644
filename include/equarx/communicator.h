// equarx — the communicator: a group of ranks that AllReduce together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "equarx/options.h"
#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx {

namespace transport { class Transport; }

/// Counters a communicator keeps across calls.
struct CommStats {
  uint64_t bytes_sent = 0;  ///< bytes this rank handed to the transport, all calls together
  uint64_t calls = 0;       ///< allreduce calls made
};

/// One rank's end of a group. Not thread-safe: one caller thread per Communicator.
class Communicator {
 public:
  /// Wraps a transport (the communicator owns it). Most users call a factory such as
  /// CreateInProcessGroup instead.
  explicit Communicator(std::unique_ptr<transport::Transport> transport);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;

  /// Sums `count` elements of `dtype` from `send` over all ranks into `recv` on every rank.
  /// `send == recv` is allowed (in place). Every rank's result is bitwise identical.
  /// Buffers are borrowed for the duration of the call.
  Status AllReduce(const void* send, void* recv, size_t count, DType dtype,
                   const AllReduceOptions& options = {});

  /// Wire bytes one rank sends for an AllReduce of `count` elements with these options.
  static uint64_t WireBytesPerRank(size_t count, DType dtype, int ranks,
                                   const AllReduceOptions& options);

  CommStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Creates `ranks` communicators whose ranks are threads of this process. Give each to
/// its own thread; every byte still passes through the (in-process) transport.
Status CreateInProcessGroup(int ranks, std::vector<std::unique_ptr<Communicator>>* out);

}  // namespace equarx
