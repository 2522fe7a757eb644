// equarx `two_shot` — all-to-all reduce-scatter + all-gather: exactly two quantizations.
//
//   RS (one step): rank r encodes its contribution to every shard c != r once and sends it
//   straight to owner c. The owner decodes all N-1 contributions and sums them with its
//   own in a fixed order (rank 0, 1, ..., N-1), in f32.
//
//     r0 -> {r1: x0[s1], r2: x0[s2], r3: x0[s3]}   ...   r1 sums x0[s1]^ + x1[s1] + x2[s1]^ + x3[s1]^
//
//   AG (one step): the owner encodes its final shard once, keeps dequant(quant(x)) itself and
//   sends the same bytes to every other rank, which decode them: all results bitwise equal.
//
// Error: every value is quantized once on its way to the owner (independent errors, each
// <= blockmax/254 of that rank's own contribution, not of a growing partial sum) and the sum
// once more in the AG — two quantizations whatever N, versus N in the full ring. Bytes per
// rank are the same as the rings (2(N-1)/N of the tensor), but each step talks to all N-1
// peers at once: best on switched networks, where no single link is shared by the pairs.
// Sends go to peers in the order r+1, r+2, ... so that every rank starts on a different one.
// Error feedback stages the contribution as f32(send) + residual; each RS encode then adds
// what it lost to the residual, and the owner adds (final sum - its result). A rotation is
// applied where the contribution is read and the result written (CallIo, call_io.h).
//
// The schedule is the executor's (executor.cc): an all-to-all plan is one lane per peer
// offset d = 1 .. N-1 in each phase, each one step in direction d (plan.h, LaneAt); the owner
// sums in rank order.
#include "algo/plan.h"

namespace equarx::algo {

Plan MakeTwoShotPlan(const PlanArgs& a) {
  Plan p = MakeFullPlan(a);
  p.name = "two_shot";
  p.all_to_all = true;
  return p;
}

}  // namespace equarx::algo
