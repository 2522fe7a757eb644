// equarx — communicators across processes and hosts without MPI: the caller supplies the
// set-up's exchange (an all-gather over a key-value store, e.g. torch.distributed's Store or
// JAX's distributed client), equarx builds its own data path over it.
//
// The exchange carries only set-up cards (identity, listening addresses, the shared-memory
// segment's name); it must be trusted, as MPI is in CreateMpiCommunicator: whoever can write
// into it can join the group (docs/security.md). Every collective's bytes then move over
// equarx's authenticated TCP connections or shared-memory rings, with deadlines.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "equarx/communicator.h"

namespace equarx {

/// How the ranks of a communicator that spans processes move their data.
enum class DataPath {
  /// MPI non-blocking point-to-point on a private duplicate of the communicator: whatever
  /// MPI runs on (shared memory, TCP, InfiniBand). Failure handling is MPI's: with Open MPI
  /// 4.1 over TCP a connection reset can abort the rank that sees it (docs/errors.md). Only
  /// CreateMpiCommunicator offers it.
  kMpi,
  /// equarx's own TCP connections, one per pair of ranks. A dead peer fails every
  /// survivor's call within its deadline (kRemoteError or kTimeout). Ranks on one host use
  /// loopback; others reach each other through `socket_interface`.
  kSockets,
  /// equarx's shared-memory rings (src/transport/shm/): every rank must be on one host
  /// (checked: kInvalidArgument on every rank otherwise). No TCP at all; a dead peer
  /// process fails every survivor's call within 50 ms, a stopped one at the deadline.
  kSharedMemory,
  /// equarx's own transport per peer (the default): shared-memory rings to the ranks of this
  /// host (equal host name and boot), TCP to the others (src/transport/shm/host_transport.h).
  kHost,
};

/// "mpi", "sockets", "shm" or "host": the name EQUARX_DATA_PATH takes.
const char* DataPathName(DataPath path);

/// The data path named `name` ("mpi", "sockets", "shm" or "host"); kInvalidArgument otherwise.
Status ParseDataPath(const std::string& name, DataPath* out);

/// The caller's exchange for the set-up: every rank passes `bytes` bytes (the same count on
/// every rank) and receives every rank's bytes in rank order into `all` (size * bytes). It
/// blocks until all ranks have contributed, and must return an error (kTimeout) rather than
/// wait past the set-up's deadline. Called several times per set-up, in the same order on
/// every rank, always from the thread that called CreateCommunicator.
using AllGatherFn = std::function<Status(const void* mine, size_t bytes, void* all)>;

/// How a set-up connects the ranks: what BootstrapOptions and MpiCommunicatorOptions
/// (equarx/mpi.h) both take.
struct ConnectOptions {
  /// kHost (the default: rings to the ranks of this host, TCP to the others, the hosts found,
  /// not configured), kSockets or kSharedMemory; kMpi only through CreateMpiCommunicator (e.g.
  /// for InfiniBand).
  DataPath data_path = DataPath::kHost;
  /// kSockets, kHost: the interface other hosts connect to (e.g. "eth1"); empty: the first
  /// non-loopback IPv4 interface that is up.
  std::string socket_interface;
  /// The set-up's deadline (every step of it; a caller's exchange must respect it too).
  int setup_timeout_ms = 60000;
  /// kSockets, kHost: encrypt and authenticate everything equarx's TCP connections carry after
  /// their handshake (AES-256-GCM under keys of each connection; docs/security.md). The
  /// shared-memory rings between the ranks of one host are not encrypted; kMpi refuses it
  /// (its connections are MPI's). Every rank must give the same (checked: a mismatch fails
  /// the set-up on every rank).
  bool encrypt = false;
};

struct BootstrapOptions : ConnectOptions {
  /// The defaults overridden by EQUARX_DATA_PATH, EQUARX_SOCKET_IFNAME and EQUARX_ENCRYPT (an
  /// unknown data path, or an EQUARX_ENCRYPT other than 0 or 1, is an error).
  static Status FromEnvironment(BootstrapOptions* out);
};

/// Creates rank `rank` of a group of `size` processes. Collective: every rank calls it with
/// the same `size`, data path and an exchange that reaches the same group. The first exchange
/// carries a card per rank (rank, size, data path, version) and every rank checks all of
/// them, so a wrong world size, a duplicated rank or differing data paths fail with
/// kInvalidArgument on every rank that sees the cards (a rank that waits for a card that never
/// comes fails by the exchange's own timeout). The last exchange agrees on the outcome, so a
/// rank whose connections failed makes every rank fail.
Status CreateCommunicator(int rank, int size, const AllGatherFn& allgather, const BootstrapOptions& options,
                          std::unique_ptr<Communicator>* out);

}  // namespace equarx
