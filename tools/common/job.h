// equarx tools — never wait on a dead or stopped rank under mpirun.
//
// A rank can die or stop (SIGSTOP, a debugger, a frozen node) at any moment. equarx's own
// collectives have deadlines and fail (kTimeout, kRemoteError); MPI's blocking collectives
// have none: a barrier, the reduction that agrees on a verdict, MPI_Finalize all wait for the
// missing rank forever. So the tools, apps and test programs that run under mpirun
//   - end the job as soon as their communicator has failed (EndJobIfFailed), and
//   - make their own MPI steps through MpiBarrier / MpiAllreduce / MpiBcast, which poll the
//     non-blocking form until a deadline and end the job when it passes.
// Ending the job is MPI_Abort: mpirun then kills every rank, a stopped one included, and exits
// non-zero. (Under `mpirun --enable-recovery` MPI_Abort ends only the calling rank.)
#pragma once

#include "equarx/communicator.h"

#ifdef EQUARX_HAVE_MPI
#include <mpi.h>
#endif

namespace equarx::tools {

/// If `comm` has failed (Communicator::failure()) and this process is an MPI rank (MPI
/// initialized and not finalized): prints "<program>: rank R: <failure>; ending the job" to
/// stderr, waits `grace_ms` so that the other ranks that saw the failure can print theirs, and
/// calls MPI_Abort(MPI_COMM_WORLD, 1), which does not return. Otherwise returns at once.
void EndJobIfFailed(const Communicator& comm, int grace_ms = 1000);

#ifdef EQUARX_HAVE_MPI
/// How long a tool's own MPI step may wait for the other ranks: the larger of 10 s and twice
/// the collectives' deadline (EQUARX_TIMEOUT_MS). It also covers the other ranks' local work
/// between two collectives, so the tools keep that work balanced (equarx-perf checks its
/// result on every rank, a slice each). Steps that wait for unbounded local work (loading a
/// model) use MPI directly.
int MpiStepDeadlineMs();

/// MPI_Barrier, MPI_Allreduce (MPI_IN_PLACE allowed) and MPI_Bcast that end the job, naming
/// the step, if it has not completed within `deadline_ms`.
void MpiBarrier(MPI_Comm comm, int deadline_ms = MpiStepDeadlineMs());
void MpiAllreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                  int deadline_ms = MpiStepDeadlineMs());
void MpiBcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
              int deadline_ms = MpiStepDeadlineMs());
#endif

}  // namespace equarx::tools
