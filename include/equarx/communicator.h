// equarx — the communicator: a group of ranks that AllReduce together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "equarx/options.h"
#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx {

namespace transport { class Transport; }

/// Counters a communicator keeps across calls.
struct CommStats {
  uint64_t bytes_sent = 0;  ///< bytes this rank handed to the transport, all calls together
  uint64_t calls = 0;       ///< allreduce calls made
  /// Scratch memory the communicator holds for its calls, in bytes: the most any call so far
  /// needed (kept for the next). A call uses at most max(64 MiB, a quarter of its message).
  uint64_t scratch_bytes = 0;
};

/// Opt-in error telemetry of one call, on one rank: what this rank's own encodes did (every
/// quantization it performed, all hops and phases). Estimates come from each block's scale:
/// with code spacing e in a block, an element's rounding error is modelled as uniform,
/// e^2/12 mean square (e^2/6 stochastic), at most e/2 (e stochastic). Unquantized wires
/// (the ring, the raw phase of `rs` or `ag`) add nothing here.
struct AllReduceStats {
  uint64_t encoded_values = 0;  ///< values this rank quantized (a value encoded twice counts twice)
  uint64_t clipped = 0;         ///< of those, values whose scaled magnitude exceeded the code range
                                ///< before clamping (only an f32 rounding ulp with absmax scales)
  double sum_sq_err_est = 0;    ///< estimated sum of squared quantization errors
  double rms_err_est = 0;       ///< sqrt(sum_sq_err_est / encoded_values)
  float max_abs_err_est = 0;    ///< estimated largest abs quantization error of one value
  double encoded_rms = 0;       ///< RMS of the values this rank quantized (finite ones)
  double rel_rms_err_est = 0;   ///< rms_err_est / encoded_rms (0 if nothing was encoded)
};

/// Per-rank buffers and outputs of one call beyond the plain AllReduce; all optional.
struct AllReduceExtras {
  /// Error feedback (for training): `count` f32 values owned by the caller, one per element.
  /// Before quantizing, this rank's contribution becomes send + residual; after the call the
  /// residual holds what this rank's quantizations lost (each encode's value minus its
  /// decoded value, and for the elements this rank owns the final sum minus the result).
  /// Summed over ranks, new residuals + result = the sum of (send + old residual) up to f32
  /// rounding: nothing is lost, only delayed to the next call. Start with zeros. Non-finite
  /// losses are not accumulated. Must not overlap send or recv. Not with naive_fp8.
  float* residual = nullptr;
  /// Telemetry of this call on this rank (overwritten).
  AllReduceStats* stats = nullptr;
};

/// One rank's end of a group. Not thread-safe: one caller thread per Communicator.
class Communicator {
 public:
  /// Wraps a transport (the communicator owns it). Most users call a factory such as
  /// CreateInProcessGroup instead.
  explicit Communicator(std::unique_ptr<transport::Transport> transport);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  /// What option ranks_per_host resolves to when a call leaves it at 0: EQUARX_RANKS_PER_HOST
  /// (read when the communicator was made), else the hosts' layout its data path found (R
  /// consecutive ranks per host; an in-process group is one host of all its ranks), else 1.
  uint32_t ranks_per_host() const;

  /// Sums `count` elements of `dtype` from `send` over all ranks into `recv` on every rank.
  /// `send == recv` is allowed (in place). Every rank's result is bitwise identical.
  /// Buffers are borrowed for the duration of the call.
  Status AllReduce(const void* send, void* recv, size_t count, DType dtype,
                   const AllReduceOptions& options = {});
  /// The same, with error feedback and/or telemetry (see AllReduceExtras). Ranks may differ
  /// in which extras they pass.
  Status AllReduce(const void* send, void* recv, size_t count, DType dtype,
                   const AllReduceOptions& options, const AllReduceExtras& extras);

  /// Wire bytes rank 0 sends for an AllReduce of `count` elements with these options on
  /// `ranks` ranks whose hosts are not known (ranks_per_host from the options, else
  /// EQUARX_RANKS_PER_HOST, else 1).
  static uint64_t WireBytesPerRank(size_t count, DType dtype, int ranks,
                                   const AllReduceOptions& options);
  /// The same on this communicator: its ranks, the environment read when it was made and the
  /// hosts its data path found (what `auto` resolves through). Rank 0's bytes.
  uint64_t WireBytesPerRank(size_t count, DType dtype, const AllReduceOptions& options) const;

  CommStats stats() const;

  /// Ok while the communicator is usable. After a call failed part-way (a timeout, a lost
  /// peer: docs/errors.md) every later call is refused, and this is the status it returns.
  const Status& failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Creates `ranks` communicators whose ranks are threads of this process. Give each to
/// its own thread; every byte still passes through the (in-process) transport.
Status CreateInProcessGroup(int ranks, std::vector<std::unique_ptr<Communicator>>* out);

}  // namespace equarx
