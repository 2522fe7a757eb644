// equarx — communicators over MPI (built with EQUARX_ENABLE_MPI).
#pragma once

#include <mpi.h>

#include <memory>

#include "equarx/communicator.h"

namespace equarx {

/// Creates this process's Communicator over `comm` (duplicated, so equarx's messages never
/// mix with the caller's). Collective over `comm`: every rank must call it. MPI must be
/// initialized (MPI_THREAD_SERIALIZED or better if other threads also call MPI).
Status CreateMpiCommunicator(MPI_Comm comm, std::unique_ptr<Communicator>* out);

}  // namespace equarx
