// equarx `semi` — the EQuARX semi-loop AllReduce.
//
// For every owner o, two chains approach it from both sides of the ring instead of one chain
// going all the way round. With L = ceil((N-1)/2) and R = floor((N-1)/2):
//
//     left chain  (clockwise):         o-L -> o-L+1 -> ... -> o-1 -> o
//     right chain (counter-clockwise): o+R -> o+R-1 -> ... -> o+1 -> o
//
// At RS step t every rank is link t of one left chain (owner r+L-t) and one right chain
// (owner r-R+t): it decodes what it received, adds its contribution in f32, re-encodes and
// passes it on, in both directions at once. The owner then sums in a fixed order:
// (own + decode(left)) + decode(right), all f32. The AG is a two-sided broadcast: the owner's
// shard, encoded once, travels L hops clockwise and R hops counter-clockwise unchanged.
//
// Error growth: a chain holds at most L requantizations in series instead of N-1, and the
// two chains' errors are independent, so the error is about that of a ring of N/2 (the
// paper's 0.001 vs 0.0014 at N = 8). Bytes per rank: the same as `full` (each link carries
// whole shards, N-1 per rank), spread over both directions; ceil((N-1)/2) steps per phase.
#include "algo/plan.h"

namespace equarx::algo {

Plan MakeSemiPlan(const PlanArgs& a) {
  Plan p = MakeFullPlan(a);
  p.name = "semi";
  const int left = a.ranks / 2;         // ceil((N-1)/2)
  const int right = (a.ranks - 1) / 2;  // floor((N-1)/2)
  p.rs[0] = Lane{0, +1, left};
  p.rs[1] = Lane{0, -1, right};
  p.ag[0] = Lane{0, +1, left};
  p.ag[1] = Lane{0, -1, right};
  p.num_rs = p.num_ag = 2;
  return p;
}

}  // namespace equarx::algo
