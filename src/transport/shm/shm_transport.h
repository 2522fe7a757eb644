// equarx shared-memory transport: ranks of one host exchange messages through rings in a
// POSIX shared-memory segment instead of TCP over loopback.
//
// Layout: one segment per group, created by rank 0 under a random name (/dev/shm, mode 0600,
// so only the same user can open it) and unlinked as soon as every rank has mapped it, so
// nothing is left behind even if ranks die. It holds a header (a random 128-bit nonce that
// every rank checks), one slot per rank {doorbell, sleeping flag, pid} and one single-producer
// single-consumer byte ring per ordered pair of ranks {head, tail, closed flags, data}.
//
// Each ring is a byte stream; the stream transport (src/transport/stream/) does the framing,
// matching, cancellation and failure handling exactly as over TCP. A writer copies what fits
// into the ring and publishes the new head (release); the reader copies out and publishes the
// tail. Whoever moves a ring rings the other side's doorbell: a counter in its slot, and a
// futex wake when that rank is asleep. A rank with nothing to do sleeps on its own doorbell
// (futex, at most 50 ms at a time) — no busy spinning that would steal the codec's core.
//
// Failures: a peer that destroys its transport closes its rings (the other side reads what
// was sent, then kRemoteError); a peer whose process dies is seen through a pidfd within one
// 50 ms slice (kRemoteError naming it); a peer that is alive but stopped leaves the waiter
// asleep until the call's deadline (kTimeout).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "transport/stream/stream_transport.h"
#include "transport/transport.h"

namespace equarx::transport {

struct ShmOptions {
  /// Bytes of each ring (one per ordered pair of ranks); 0: 16 MiB for 2 ranks, less beyond
  /// so that the rings stay within 64 MiB (4 ranks: 4 MiB, 8 ranks: 1 MiB; never under
  /// 64 KiB), and smaller still if /dev/shm has less than twice that free. A larger ring lets
  /// a sender run further ahead of a receiver that is busy in the codec. The segment's pages
  /// are reserved at set-up: too little room in /dev/shm is a set-up error, never a SIGBUS.
  size_t ring_bytes = 0;
  /// As StreamLimits.
  size_t max_message_bytes = (size_t(1) << 31) - 1;
  size_t max_unexpected_bytes = size_t(16) << 20;
};

/// Internal: this boot's id (/proc/sys/kernel/random/boot_id), into `out` (at most n - 1
/// characters): ranks with equal host names and boot ids share a host.
void BootId(char* out, size_t n);

/// Internal: the byte streams between the members of one segment (host_transport.cc uses them
/// beside TCP connections to other hosts). Peers are named by their rank in the whole group.
class ShmStreams : public ByteStreams {
 public:
  /// Non-blocking look at the rings of `interest` (members only): which can move now.
  virtual void Scan(const std::vector<Interest>& interest, std::vector<Ready>* ready) = 0;
  /// Sets this rank's sleeping flag: while it is set, whoever moves one of its rings wakes it
  /// (futex, and the OnWake callback).
  virtual void Sleeping(bool on) = 0;
  /// Called with a peer's rank when this rank moved a ring of that peer while it slept.
  virtual void OnWake(std::function<void(int peer)> wake) = 0;
  /// The peer is known to be gone (e.g. its other connection to us ended).
  virtual void MarkGone(int peer) = 0;
};

/// Sets up the segment of `members` (ascending ranks of a `size`-rank group, `rank` among
/// them) through `allgather`, an all-gather over the members alone, in member order.
Status CreateShmStreams(int rank, int size, const std::vector<int>& members, const AllGather& allgather,
                        const ShmOptions& options, std::unique_ptr<ShmStreams>* out);

/// Sets up the segment through `allgather` and returns this rank's transport. Collective:
/// every rank of the group calls it with the same `size`. Every rank must be on this host
/// (the same boot and PID namespace, and able to open rank 0's segment): otherwise every rank
/// fails with kInvalidArgument saying which rank could not join.
Status CreateShmTransport(int rank, int size, const AllGather& allgather, const ShmOptions& options,
                          std::unique_ptr<Transport>* out);

}  // namespace equarx::transport
