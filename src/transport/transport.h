// equarx transport — the one interface every backend implements.
//
// Non-blocking point-to-point messages between ranks of a fixed group, matched by
// (source, tag) in posting order, as in MPI. The transport moves bytes and nothing else: it
// never sees a scale or an element type. Every wait takes an absolute deadline, so no call
// can hang forever; a request that cannot complete is cancelled before its buffer is reused.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "equarx/status.h"

namespace equarx::transport {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// Storage for one in-flight operation. Owned by the caller, which must keep it at a stable
/// address from isend/irecv until Wait or Cancel returns; the backend keeps its state inside.
struct Request {
  alignas(16) unsigned char state[96];
};

/// The statuses every backend reports the same way.
inline Status WaitTimedOut(bool sending, int peer) {
  return Timeout(std::string(sending ? "send to" : "receive from") + " rank " +
                 std::to_string(peer) + " did not complete in time");
}
/// A message whose length is not the receive's: the ranks disagree on the call (kMismatch).
inline Status LengthMismatch(int peer, size_t sent, size_t expected) {
  return Mismatch("message length mismatch with rank " + std::to_string(peer) + ": " +
                  std::to_string(sent) + " bytes sent, " + std::to_string(expected) + " expected");
}

/// A bootstrap channel that backends use to set themselves up (MPI's, in
/// CreateMpiCommunicator): gathers `bytes` bytes from every rank into `all` (rank r's at
/// all + r * bytes). Collective.
using AllGather = std::function<Status(const void* mine, size_t bytes, void* all)>;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Starts sending `bytes` from `buf` to `peer`. `buf` must stay valid and unchanged until
  /// the request completes.
  virtual Status Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) = 0;
  /// Starts receiving exactly `bytes` into `buf` from `peer`. A message of another length is an
  /// error reported by Wait.
  virtual Status Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) = 0;
  /// Blocks until `req` completes or `deadline` passes (then kTimeout; the request stays live
  /// and must be waited on again or cancelled).
  virtual Status Wait(Request* req, Deadline deadline) = 0;
  /// Non-blocking completion check: true when done (then `*status` holds its result).
  virtual bool Test(Request* req, Status* status) = 0;
  /// Withdraws a request that has not completed; afterwards its buffer is free. Safe on a
  /// request that already completed.
  virtual void Cancel(Request* req) = 0;

  /// Ends every connection of this transport at once, after its owner failed part-way (a
  /// timeout, a lost peer), so that the peers' pending and later requests to this rank fail
  /// promptly (kRemoteError) instead of waiting for their deadlines: one rank's failure
  /// reaches the whole group within milliseconds. This transport's own requests fail
  /// afterwards. Default: nothing (in-process and MPI transports).
  virtual void Abort(const std::string& why) { (void)why; }

  /// How long a Wait polls for progress before it sleeps (EQUARX_SPIN_US): a small call's
  /// messages arrive within microseconds, and waking a sleeping thread costs more. Polling
  /// yields the core between looks, so that ranks sharing cores still progress.
  void SetSpin(std::chrono::microseconds spin) { spin_ = spin; }
  std::chrono::microseconds spin() const { return spin_; }

  /// Holds back the bytes of later Isends (true) until Cork(false), which starts them all, so
  /// that several small messages to a peer leave together (one system call, one wake-up of the
  /// peer). Default: nothing (transports that do not write bytes themselves).
  virtual void Cork(bool on) { (void)on; }

  /// Bytes this rank has handed to Isend so far.
  virtual uint64_t bytes_sent() const = 0;
  /// Ranks of this group that run on this host and share its cores, as far as the transport
  /// knows (1 when it does not); the default of the `threads` option divides the cores by it.
  virtual int local_ranks() const { return local_ranks_; }

  /// The hosts' layout, when the transport knows it: R when the ranks sit on hosts of R
  /// consecutive ranks each (the last host may have fewer; every rank on one host: R = size),
  /// 1 when it does not know or the layout is not of that form. The default of the
  /// `ranks_per_host` option (algorithm hierarchical, and the network auto's cost model
  /// assumes: one host means no link at all).
  int ranks_per_host() const { return ranks_per_host_; }
  /// Set by the transport's creator, which found the hosts (the same on every rank).
  void SetHosts(int local_ranks, int ranks_per_host) {
    local_ranks_ = local_ranks;
    ranks_per_host_ = ranks_per_host;
  }

 private:
  std::chrono::microseconds spin_{50};
  int local_ranks_ = 1, ranks_per_host_ = 1;
};

/// The layout of ranks on hosts (Transport::ranks_per_host) from each rank's host, given as the
/// first rank on that host: R when the hosts hold R consecutive ranks each, in rank order (the
/// last may hold fewer; one host: R = the ranks); else 1.
inline int RanksPerHost(const std::vector<int>& first_on_host) {
  const int n = int(first_on_host.size());
  int r = 0;
  while (r < n && first_on_host[size_t(r)] == 0) ++r;
  if (r < 2) return 1;
  for (int i = 0; i < n; ++i)
    if (first_on_host[size_t(i)] != i - i % r) return 1;
  return r;
}

/// Polls `done()` until it is true or `spin` has passed, yielding the core between looks;
/// returns done(). The spin before a wait sleeps (Transport::SetSpin).
template <class Done>
bool SpinUntil(std::chrono::microseconds spin, Done done) {
  if (done()) return true;
  if (spin.count() <= 0) return false;
  const Deadline end = Clock::now() + spin;
  do {
    std::this_thread::yield();
    if (done()) return true;
  } while (Clock::now() < end);
  return false;
}

}  // namespace equarx::transport
