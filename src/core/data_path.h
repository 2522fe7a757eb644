// equarx internal: the transport of a data path built over an all-gather, shared by the two
// ways a communicator spans processes (CreateMpiCommunicator: MPI's all-gather;
// CreateCommunicator: the caller's, e.g. a key-value store).
#pragma once

#include <memory>

#include "equarx/bootstrap.h"
#include "transport/socket/socket_transport.h"
#include "transport/transport.h"

namespace equarx::internal {

/// How many all-gathers the transport of `path` makes (kSockets, kHost, kSharedMemory).
int DataPathExchanges(DataPath path);

/// Builds this rank's transport of `path` (kSockets, kHost or kSharedMemory) over `allgather`,
/// with the socket options `so` (interface, set-up deadline). Collective.
Status CreateDataPathTransport(DataPath path, int rank, int size, const transport::AllGather& allgather,
                               const transport::SocketOptions& so, std::unique_ptr<transport::Transport>* out);

}  // namespace equarx::internal
