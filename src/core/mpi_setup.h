// equarx internal: the MPI communicator's set-up, split from CreateMpiCommunicator so that a
// test program can wrap the transport (e.g. count its messages) before building the
// Communicator around it, and observe the set-up's stages. Not part of the public API, and
// nothing here is reachable from an environment variable.
#pragma once
#ifdef EQUARX_HAVE_MPI
#include <mpi.h>

#include <functional>
#include <memory>

#include "equarx/mpi.h"
#include "transport/transport.h"

namespace equarx::internal {

/// Called on this rank at each stage of the set-up, before the stage's collective step:
///   "agree"      before the ranks agree on the data path (an MPI allreduce)
///   "dup"        kMpi: before duplicating the communicator (MPI_Comm_idup)
///   "identity"   kSockets, kHost: before the exchange of identities (an MPI allgather)
///   "address"    kSockets, kHost: before the exchange of listening addresses (an MPI allgather)
///   "mesh"       kSockets, kHost: after the addresses, before the connections are made
///   "host"       kHost: after the mesh, before the exchange of host names (an MPI allgather)
///   "shm-card"   kSharedMemory, kHost: before the exchange of the segment's name (an MPI allgather)
///   "shm-join"   kSharedMemory, kHost: before the ranks report mapping it (an MPI allgather)
///   "confirm"    every path but kMpi: before the ranks agree on the outcome (an MPI allreduce)
/// Tests only (tests/mpi/fault_test.cc stops or kills a rank there).
using SetupHook = std::function<void(const char* stage)>;

/// Everything CreateMpiCommunicator does except building the Communicator: the data-path
/// agreement, then the transport. Every MPI step of it is bounded by
/// options.setup_timeout_ms from the start of the call (kTimeout naming the step); after such
/// a timeout `comm` has an unfinished collective and must not be used for collectives again
/// (the caller should end the job).
Status CreateMpiTransport(MPI_Comm comm, const MpiCommunicatorOptions& options,
                          std::unique_ptr<transport::Transport>* out, const SetupHook& hook = {});

}  // namespace equarx::internal
#endif
