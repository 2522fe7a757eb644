// equarx — communicators over MPI (built with EQUARX_ENABLE_MPI).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "equarx/bootstrap.h"
#include "equarx/communicator.h"

namespace equarx {

// DataPath and DataPathName: equarx/bootstrap.h.

/// ConnectOptions (equarx/bootstrap.h). The default data path, kHost, is equarx's own TCP
/// connections between hosts (on TCP networks faster than MPI point-to-point,
/// docs/benchmarks.md "Data path"; a dead or stopped peer fails every survivor's call within
/// its deadline) and shared-memory rings between the ranks of one host, which it finds itself
/// (host name and boot id), with their layout (the default of ranks_per_host). The set-up's
/// deadline bounds every step of CreateMpiCommunicator (MPI's agreement steps, the duplication
/// of the communicator, the other paths' exchanges and connections), else kTimeout naming the
/// step; the MPI communicator then has an unfinished collective: end the job (a rank has not
/// arrived, or has died or stopped).
struct MpiCommunicatorOptions : ConnectOptions {
  /// The defaults overridden by EQUARX_DATA_PATH, EQUARX_SOCKET_IFNAME and EQUARX_ENCRYPT, as
  /// BootstrapOptions::FromEnvironment reads them (a malformed value is an error).
  static Status FromEnvironment(MpiCommunicatorOptions* out);
};

/// Creates this process's Communicator over `comm`, with options from the environment
/// (MpiCommunicatorOptions::FromEnvironment). Collective over `comm`: every rank must call
/// it. MPI must be initialized (MPI_THREAD_SERIALIZED or better if other threads also call
/// MPI). equarx's messages never mix with the caller's.
Status CreateMpiCommunicator(MPI_Comm comm, std::unique_ptr<Communicator>* out);

/// As above with explicit options. Every rank must pass the same data path (checked: a
/// mismatch is kInvalidArgument on every rank).
Status CreateMpiCommunicator(MPI_Comm comm, const MpiCommunicatorOptions& options,
                             std::unique_ptr<Communicator>* out);

}  // namespace equarx
