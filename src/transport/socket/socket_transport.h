// equarx socket transport: our own TCP connections between the ranks of a group.
//
// Why: a transport we own end to end is the only way to keep the promise that a dead peer
// gives every survivor an error status within the call's deadline. Underneath MPI (Open MPI
// 4.1's ob1 over its TCP BTL) a connection reset is fatal to the process that sees it: Open
// MPI either aborts that rank or spins inside MPI_Test where no deadline can reach it. Here a
// reset or end-of-stream fails the requests of that one peer with kRemoteError, and every
// wait sleeps in poll() until the deadline, so nothing hangs.
//
// Design: a full mesh of TCP connections, set up once (socket_setup.cc). Through a
// caller-supplied all-gather (MPI's, in CreateMpiCommunicator: the trusted channel) the ranks
// share a fresh random secret and publish where they listen: 127.0.0.1 when every rank is on
// this host, else the chosen interface's address. Rank i connects to every rank j < i and
// accepts every rank j > i; each connection proves in both directions, by an HMAC
// challenge-response, that its ends know the secret (socket_handshake.h), and anything else
// that connects is closed without delaying the others. The listener is closed once the mesh
// is up. A message is a 16-byte header {tag, length} and its payload. Receives are matched by
// (source, tag) in posting order, as in MPI (src/transport/stream/): a header that meets a
// posted receive streams straight into the caller's buffer; otherwise the message is read into
// a buffer of its own until a receive claims it. Progress happens inside Isend, Wait and Test
// (non-blocking sends/recvs, poll for readiness), on the calling thread only. With `encrypt`,
// every byte after the handshake travels in AES-256-GCM records under keys of that connection
// (encrypted_streams.h); without, the bytes are the frames themselves. docs/security.md has
// the threat model of both modes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/socket/encrypted_streams.h"
#include "transport/socket/socket_handshake.h"
#include "transport/transport.h"

namespace equarx::transport {

struct SocketOptions {
  /// Network interface whose IPv4 address the other hosts connect to (e.g. "eth1"); empty:
  /// the first interface that is up and not loopback. Ranks on one host always use loopback.
  std::string interface;
  /// How long setup may wait for the other ranks to connect and authenticate.
  int setup_timeout_ms = 60000;
  /// If set: the set-up's overall deadline (the caller's, e.g. CreateMpiCommunicator's,
  /// which began before the address exchange); the mesh then also ends by it.
  std::chrono::steady_clock::time_point setup_deadline{};
  /// How long one accepted connection may take over its handshake before it is closed (the
  /// setup deadline caps it). Genuine ranks answer within a few round trips.
  int handshake_timeout_ms = 10000;
  /// Accepted connections allowed in their handshake at once; beyond that the oldest one
  /// that has not yet said hello is closed (then the oldest awaiting its proof).
  int max_pending_connections = 64;
  /// The name that decides which ranks share a host (equal names: one host); empty: this
  /// machine's gethostname(). Tests set it to play several hosts in one process.
  std::string host_name;
  /// The largest message: Isend refuses a longer one (kUnsupported, as the MPI data path
  /// refuses one over 2 GiB), and a frame header announcing more is a protocol error that
  /// closes that connection (every request on it fails with kRemoteError naming the peer).
  size_t max_message_bytes = (size_t(1) << 31) - 1;
  /// Per peer: bytes of messages that arrived before their receive was posted and are held
  /// in memory. A message that does not fit is left in the kernel (TCP flow control stops
  /// the sender) until its receive is posted, then read straight into the caller's buffer.
  size_t max_unexpected_bytes = size_t(16) << 20;
  /// Encrypt and authenticate everything the connections carry after the handshake
  /// (encrypted_streams.h). Every rank must agree: a mismatch fails setup on every rank.
  bool encrypt = false;
  /// Encrypted mode: key updates and the end of a connection's nonces (tests lower them).
  RecordLimits records;
};

/// A finished mesh: fds[p] is the connected, non-blocking, authenticated socket to rank p (-1
/// for this rank); keys[p] that connection's keys when the mesh is encrypted (else empty).
struct Mesh {
  std::vector<int> fds;
  std::vector<handshake::DataKeys> keys;
};

/// Builds the mesh of this rank's connections. Collective over the group: every rank must
/// call it with the same `size`.
Status CreateSocketTransport(int rank, int size, const AllGather& allgather,
                             const SocketOptions& options, std::unique_ptr<Transport>* out);

/// The mesh alone. Collective, as CreateSocketTransport.
Status CreateSocketMesh(int rank, int size, const AllGather& allgather, const SocketOptions& options, Mesh* out);

/// The byte streams of a finished mesh (socket_transport.cc), encrypted when it has keys, for
/// transports that use some of its connections for their own purpose
/// (src/transport/shm/host_transport.cc). Takes the fds.
std::unique_ptr<ByteStreams> MakeSocketStreams(Mesh mesh, const SocketOptions& options);

/// Internal (socket_setup.cc -> socket_transport.cc): the stream transport over a finished
/// mesh. Takes its fds.
std::unique_ptr<Transport> MakeSocketTransport(int rank, Mesh mesh, const SocketOptions& options);

}  // namespace equarx::transport
