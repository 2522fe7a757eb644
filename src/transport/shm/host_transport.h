// equarx host-aware transport: shared-memory rings to the ranks of this host, TCP to the others.
//
// Set-up builds the authenticated TCP mesh (src/transport/socket/) and groups the ranks by
// host (equal host name and boot id); the ranks of each host then share one segment of rings
// (src/transport/shm/). Data to a rank of this host goes through the rings; data to another
// host through its TCP connection. The TCP connection to a rank of this host stays open as
// that pair's doorbell: a rank that moves a sleeping neighbour's ring writes one byte to it,
// so that one poll() waits on remote sockets and local rings at once, and its end of stream
// says at once that the neighbour is gone. The data loop is the stream transport's, so
// framing, matching, cancellation and failures are as on every other stream backend.
#pragma once

#include <memory>

#include "transport/shm/shm_transport.h"
#include "transport/socket/socket_transport.h"

namespace equarx::transport {

/// Collective over the group, as CreateSocketTransport. `shm` applies to every host's
/// segment (its first rank's options decide the ring size).
Status CreateHostTransport(int rank, int size, const AllGather& allgather, const SocketOptions& socket,
                           const ShmOptions& shm, std::unique_ptr<Transport>* out);

}  // namespace equarx::transport
