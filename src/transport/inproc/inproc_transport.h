// equarx in-process transport: ranks are threads of one process.
//
// A Fabric holds one mailbox per rank. Isend looks for a matching posted receive in the
// destination's mailbox and copies straight into it; otherwise it queues the send there, and
// the matching Irecv copies from the sender's buffer. Whoever matches copies, outside the
// lock, so a message is copied exactly once, as a network would deliver it. Matching is by
// (source, tag) in posting order. Requests are intrusive list nodes kept in the caller's
// Request storage, so the hot path allocates nothing.
#pragma once

#include <memory>

#include "transport/transport.h"

namespace equarx::transport {

class InprocFabric;

/// Creates the shared fabric of an N-rank in-process group.
std::shared_ptr<InprocFabric> CreateInprocFabric(int ranks);

/// The transport of one rank of the fabric.
std::unique_ptr<Transport> CreateInprocTransport(std::shared_ptr<InprocFabric> fabric, int rank);

}  // namespace equarx::transport
