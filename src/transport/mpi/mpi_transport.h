// equarx MPI transport: the same interface as inproc/, over MPI non-blocking point-to-point.
//
// MPI's own collectives are never used underneath our algorithms. The transport works on a
// private duplicate of the caller's communicator with MPI_ERRORS_RETURN, so an MPI failure
// becomes a status instead of aborting the job. Waits poll MPI_Test until the deadline, so a
// stalled or dead peer yields kTimeout rather than a hang.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "transport/transport.h"

namespace equarx::transport {

/// Duplicates `comm` (collective, MPI_Comm_idup) and wraps it. The duplication must complete
/// by `deadline` (`budget_ms` after the set-up began: named in the error), else kTimeout:
/// the duplicate is then left pending (never freed) and `comm` must not be used for
/// collectives again.
Status CreateMpiTransport(MPI_Comm comm, std::unique_ptr<Transport>* out,
                          Deadline deadline = Deadline::max(), int budget_ms = 0);

/// Polls a non-blocking MPI collective of the set-up (MPI_Iallreduce, MPI_Iallgather,
/// MPI_Comm_idup) until it completes or `deadline` passes: kTimeout naming `what` and the
/// set-up deadline `budget_ms`, or kRemoteError if MPI reports an error. Sleeps briefly between polls. On a
/// timeout the request stays pending: its buffers must outlive the process (leak them).
Status WaitSetupStep(MPI_Request* req, Deadline deadline, int budget_ms, const std::string& what);

}  // namespace equarx::transport
