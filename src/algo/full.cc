// equarx `full` — the EQuARX full-loop AllReduce on one unidirectional ring.
//
//   RS (N-1 steps): rank r encodes its shard r-1 and sends it to r+1; at every later step
//   the receiver decodes, adds its own contribution in f32 and re-encodes (one fused
//   kernel) for the next hop. After N-1 hops the owner adds its own contribution: shard r is
//   fully reduced in f32 on rank r.
//
//     step 0: r0:[s3] -> r1     r1:[s0] -> r2     r2:[s1] -> r3     r3:[s2] -> r0
//     step 1: r1:[s3+] -> r2    ...                          (block scales go with each piece)
//
//   AG (N-1 steps): the owner encodes its final shard once, keeps dequant(quant(x)) itself
//   and the bytes travel round the ring unchanged, so every rank decodes the same bytes and
//   all results are bitwise identical.
//
// Quantized phases: `rs` (RS in int8, AG in the input dtype), `ag` (RS in the input dtype,
// or f32 with f32_partials; AG in int8) or `rs+ag`. Error growth: every RS hop requantizes the running partial, so the
// last partial carries up to N-1 quantization errors in series (each <= blockmax/254 of the
// partial for int8), plus one for a quantized AG. Bytes per rank: 2(N-1)/N of the tensor at
// (1 + 4/B) bytes per element instead of the dtype's 2 or 4.
#include "algo/plan.h"

namespace equarx::algo {

Plan MakeFullPlan(const PlanArgs& a) {
  Plan p;
  p.name = "full";
  p.regions[0] = Range{0, a.count};
  p.rs[0] = Lane{0, +1, a.ranks - 1};
  p.ag[0] = Lane{0, +1, a.ranks - 1};
  p.rs_wire = (a.phases == Phases::kAG) ? a.RawRs() : a.quantized;
  p.ag_wire = (a.phases == Phases::kRS) ? a.RawAg() : a.quantized;
  p.granule = a.quantized.block;
  return p;
}

}  // namespace equarx::algo
