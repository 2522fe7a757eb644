// equarx `full_bidir` — the EQuARX full loop on both ring directions at once.
//
// The tensor is cut at a block boundary into two halves. Half 0 runs the `full` schedule
// clockwise (r -> r+1), half 1 counter-clockwise (r -> r-1), interleaved step by step, so
// both directions of every link carry data and each direction carries half the bytes:
//
//     half 0:  r0 -> r1 -> r2 -> r3 -> r0        half 1:  r0 <- r1 <- r2 <- r3 <- r0
//
// Same quantization depth and error growth as `full` (N-1 requantizations in series in the
// RS, one more in a quantized AG); same total bytes, but on a full-duplex network the time
// of one direction's share, so about half the wire time.
#include "algo/plan.h"

namespace equarx::algo {

Plan MakeFullBidirPlan(const PlanArgs& a) {
  Plan p = MakeFullPlan(a);
  p.name = "full_bidir";
  const Range all{0, a.count};
  p.regions[0] = SplitBlocks(all, p.granule, 2, 0);
  p.regions[1] = SplitBlocks(all, p.granule, 2, 1);
  p.num_regions = 2;
  p.rs[1] = Lane{1, -1, a.ranks - 1};
  p.ag[1] = Lane{1, -1, a.ranks - 1};
  p.num_rs = p.num_ag = 2;
  return p;
}

}  // namespace equarx::algo
