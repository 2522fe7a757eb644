// equarx MPI transport: the same interface as inproc/, over MPI non-blocking point-to-point.
//
// MPI's own collectives are never used underneath our algorithms. The transport works on a
// private duplicate of the caller's communicator with MPI_ERRORS_RETURN, so an MPI failure
// becomes a status instead of aborting the job. Waits poll MPI_Test until the deadline, so a
// stalled or dead peer yields kTimeout rather than a hang.
#pragma once

#include <mpi.h>

#include <memory>

#include "transport/transport.h"

namespace equarx::transport {

/// Duplicates `comm` (collective) and wraps it.
Status CreateMpiTransport(MPI_Comm comm, std::unique_ptr<Transport>* out);

}  // namespace equarx::transport
