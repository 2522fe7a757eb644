// equarx tools — run one AllReduce on every rank of an in-process group.
//
// Wraps CreateInProcessGroup: each call runs the ranks through the tools' launcher (world.h,
// RunOnRanks), released together so the measured time covers the collective, not thread
// start-up, and reports the wall time, every rank's Status and the wire bytes each rank sent
// during the call (the delta of Communicator::stats().bytes_sent).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "equarx/communicator.h"
#include "equarx/options.h"
#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx::tools {

struct GroupCallResult {
  double seconds = 0;                 ///< wall time from the common start to the last rank done
  std::vector<uint64_t> bytes_sent;   ///< per rank, this call only
  uint64_t total_bytes() const;
  double mean_bytes_per_rank() const;
};

class InProcessGroup {
 public:
  /// Creates a group of `ranks` communicators (kInvalidArgument for ranks < 1).
  static Status Create(int ranks, std::unique_ptr<InProcessGroup>* out);

  int size() const { return int(comms_.size()); }
  Communicator& comm(int r) { return *comms_[size_t(r)]; }

  /// AllReduce of send[r] -> recv[r] on every rank r at once, with (*extras)[r] if given.
  /// Returns the first failing rank's status (prefixed with the rank) or ok.
  Status AllReduce(const std::vector<const void*>& send, const std::vector<void*>& recv,
                   size_t count, DType dtype, const AllReduceOptions& options,
                   GroupCallResult* result,
                   const std::vector<AllReduceExtras>* extras = nullptr);

 private:
  std::vector<std::unique_ptr<Communicator>> comms_;
};

/// The first rank whose `bytes` bytes at recv[r] differ from recv[0], or -1 if all agree.
int FirstDifferentRank(const std::vector<void*>& recv, size_t bytes);

}  // namespace equarx::tools
