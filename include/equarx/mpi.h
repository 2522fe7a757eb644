// equarx — communicators over MPI (built with EQUARX_ENABLE_MPI).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "equarx/communicator.h"

namespace equarx {

/// How the ranks of a communicator created from MPI move their data. MPI always does the
/// set-up (ranks, the exchange of addresses); the data path carries every collective's bytes.
enum class DataPath {
  /// MPI non-blocking point-to-point on a private duplicate of the communicator: whatever
  /// MPI runs on (shared memory, TCP, InfiniBand). Failure handling is MPI's: with Open MPI
  /// 4.1 over TCP a connection reset can abort the rank that sees it (docs/errors.md).
  kMpi,
  /// equarx's own TCP connections, one per pair of ranks (the default). A dead peer fails every
  /// survivor's call within its deadline (kRemoteError or kTimeout). Ranks on one host use
  /// loopback; others reach each other through `socket_interface`.
  kSockets,
  /// equarx's shared-memory rings (src/transport/shm/): every rank must be on one host
  /// (checked: kInvalidArgument on every rank otherwise). No TCP at all; a dead peer
  /// process fails every survivor's call within 50 ms, a stopped one at the deadline.
  kSharedMemory,
  /// equarx's own transport per peer: shared-memory rings to the ranks of this host (equal
  /// host name and boot), TCP to the others (src/transport/shm/host_transport.h).
  kHost,
};

/// "mpi", "sockets", "shm" or "host": the name EQUARX_DATA_PATH takes.
const char* DataPathName(DataPath path);

struct MpiCommunicatorOptions {
  /// The default is kSockets, chosen by measurement (docs/benchmarks.md, "Data path"): on
  /// TCP networks it is faster than MPI point-to-point and a dead or stopped peer fails every
  /// survivor's call within its deadline. kMpi stays selectable (e.g. for InfiniBand).
  DataPath data_path = DataPath::kSockets;
  /// kSockets: the interface other hosts connect to (e.g. "eth1"); empty: the first
  /// non-loopback IPv4 interface that is up.
  std::string socket_interface;
  /// The set-up's deadline: every step of CreateMpiCommunicator (MPI's agreement steps, the
  /// duplication of the communicator, the other paths' exchanges and connections) ends by
  /// it, else kTimeout naming the step. After such a timeout the MPI communicator has an
  /// unfinished collective: end the job (a rank has not arrived, or has died or stopped).
  int setup_timeout_ms = 60000;

  /// The defaults overridden by EQUARX_DATA_PATH ("mpi" or "sockets") and
  /// EQUARX_SOCKET_IFNAME. An unknown data path is an error.
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
