// Thread-rank harness: runs one function per rank of an in-process group, each on its own
// thread, and collects what every rank returned.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "equarx/communicator.h"

namespace equarx::testing {

/// Creates an N-rank in-process group and runs fn(comm) on N threads concurrently.
/// Returns each rank's status, indexed by rank.
std::vector<Status> RunRanks(int n, const std::function<Status(Communicator&)>& fn);

/// The same on an existing group (reuses the communicators' scratch across calls).
std::vector<Status> RunRanks(std::vector<std::unique_ptr<Communicator>>& comms,
                             const std::function<Status(Communicator&)>& fn);

}  // namespace equarx::testing
