// equarx `one_shot` in two halves (the schedule is in one_shot.cc), so that the communicator
// can send the call check beside the data instead of before it.
#pragma once

#include <cstdint>

#include "algo/call_io.h"
#include "algo/plan.h"

namespace equarx::algo {

/// The tag of one_shot's one message per peer and call.
inline uint64_t OneShotTag(uint64_t tag_base) { return tag_base; }
/// The tag of recursive_doubling's message of step s (recursive_doubling.cc).
inline uint64_t RecursiveDoublingTag(uint64_t tag_base, int s) { return tag_base + 1 + uint64_t(s); }

/// The largest power of two <= n (n >= 1).
inline int PowerOfTwoBelow(int n) {
  int p = 1;
  while (2 * p <= n) p *= 2;
  return p;
}
/// Whether n is a power of two.
inline bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }
/// K for the power of two p = 2^K: recursive_doubling's steps among p ranks, and the call
/// check's in a group of p (core/validate.h).
inline int Log2(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}
/// Whether a group of n ranks on hosts of `ranks_per_host` (the transport's layout, the same
/// on every rank) checks its calls in log2 n steps of one frame to one partner
/// (core::CheckTree) rather than in one all-to-all exchange of descriptors: n a power of two,
/// across hosts. On one host a message costs a copy and a wake-up, and the exchange's one step
/// beats the tree's log2 n steps in series (docs/performance.md, "Small calls"); between hosts
/// each message costs the network stack and the tree sends fewer.
inline bool ChecksByTree(int n, int ranks_per_host) { return n >= 2 && IsPowerOfTwo(n) && ranks_per_host < n; }

/// Bytes rank `rank` of `n` sends when running `plan` (recursive_doubling).
uint64_t RecursiveDoublingWireBytes(const Plan& plan, int rank, int n, size_t scratch_floor = kScratchFloor);

/// Bytes of each of the N - 1 messages a rank sends when running `plan` (one_shot) on `count`
/// elements.
uint64_t OneShotMessageBytes(const Plan& plan, size_t count);

/// How many pieces a one_shot call of `plan` on n ranks runs as (one_shot.cc, "Pieces"): 1
/// unless its buffers would pass ScratchBound.
size_t OneShotPieces(const Plan& plan, int n, size_t scratch_floor = kScratchFloor);

/// Bytes each rank sends when running `plan` (one_shot) on n ranks: N - 1 messages per piece.
uint64_t OneShotWireBytes(const Plan& plan, int n, size_t scratch_floor = kScratchFloor);
/// The same for `messages` whole messages per piece.
uint64_t OneShotWireBytes(const Plan& plan, int n, size_t scratch_floor, int messages);

class OneShotCall {
 public:
  /// `plan`, `args` and `scratch` must outlive the call. `first`: where args' elements start
  /// in the call that `plan` was made for (a piece's first element; stochastic rounding's
  /// streams count from there).
  OneShotCall(const Plan& plan, const RunArgs& args, Scratch* scratch, size_t first = 0);
  /// Posts every receive, codes this rank's contribution and sends it to every peer, or with
  /// `leave_tree_partners` to every peer but ranks r ^ 2^k, k >= 1: the call check of a group of
  /// 2^K ranks sends to those in its step k, beside its frame (SendTo; core/validate.h).
  Status Start(bool leave_tree_partners = false);
  /// Sends this rank's contribution to peer q (after Start left it out).
  Status SendTo(int q);
  /// Waits for every message (Start first if not started), sums, and writes the result (or,
  /// with a guarded rotation whose result is not finite, sets *args.rotated_nonfinite and
  /// writes nothing).
  Status Finish();
  /// After Start, when the call was refused: waits for what each peer q sent (peer_bytes[q]
  /// bytes, 0: nothing) and for this rank's sends, and withdraws the rest. The transport's
  /// failures are returned; length mismatches are expected and ignored.
  Status Drain(const uint64_t* peer_bytes);

  // recursive_doubling (recursive_doubling.cc). Start codes the contribution into the f32 partial
  // sum and sends nothing; Finish runs every step that has not run. The call check of a group of
  // 2^K ranks runs the K steps itself, one at a time (core/validate.h, CheckTree):
  /// Whether the call is recursive_doubling's.
  bool recursive_doubling() const { return plan_.recursive_doubling; }
  /// Bytes of each step's message.
  uint64_t StepBytes() const { return msg_; }
  /// Posts the receive of step k's partial sum from `partner`.
  Status PostStep(int k, int partner);
  /// Sends this rank's partial sum to `partner` (step k).
  Status SendStep(int k, int partner);
  /// Waits for step k's receive and send; with `add`, the partial sum becomes the sum of both,
  /// the lower rank's first. Without, the received bytes are dropped (a length mismatch too).
  Status FinishStep(int partner, bool add);
  /// Withdraws step k's receive (the partner sent nothing) and waits for the send.
  Status WithdrawStep();
  /// Marks the steps as run (the call check ran them all).
  void StepsRan() { steps_ran_ = true; }

 private:
  struct Buffers {
    uint8_t* slots = nullptr;
    float *acc = nullptr, *tmp = nullptr, *staged = nullptr, *loss = nullptr;
    void* out = nullptr;  // the output, when it is copied out at the end
  };
  static Buffers Lay(const RunArgs& a, Scratch* s, int n, size_t slot, bool copy_out);
  static RunArgs Bound(const RunArgs& a, void* out);
  uint8_t* Slot(int q) { return buf_.slots + size_t(q) * slot_; }
  uint8_t* Own() { return Slot(plan_.recursive_doubling ? 0 : r_); }
  Status RunSteps();  // recursive_doubling: every step, for any N (recursive_doubling.cc)
  void Add(int partner);  // partial sum += the received one, the lower rank's first

  const Plan& plan_;
  const RunArgs& args_;
  int n_, r_;
  size_t first_;
  uint64_t msg_;
  size_t slot_, esize_;
  bool copy_out_;
  Buffers buf_;
  RunArgs bound_;  // args, with the output in scratch when the result is copied out at the end
  CallIo io_;
  bool started_ = false;
  bool steps_ran_ = false;
};

/// The same for a rank that did not Start: receives and drops what each peer q sent.
Status DrainOneShot(transport::Transport* t, uint64_t tag_base, transport::Deadline deadline,
                    const uint64_t* peer_bytes, Scratch* scratch);

}  // namespace equarx::algo
