// equarx `ring` — the unquantized baseline AllReduce (our "BF16 AllReduce").
//
// Classic ring: N-1 reduce-scatter steps then N-1 all-gather steps, one direction.
//
//   RS step t: rank r sends its partial of shard r-t-1 to r+1     r0 -> r1 -> r2 -> r3 -> r0
//   AG step t: rank r forwards the final shard r-t to r+1
//
// The wire carries the input dtype (bf16 partial sums for a bf16 AllReduce, as a bf16
// collective does); every addition is in f32 after widening. Error: each hop rounds the
// running partial to the input dtype (for bf16, <= 2^-9 relative per hop); f32 inputs are
// exact up to f32 summation order (f32_partials makes bf16/f16 RS hops carry f32 too), and integer-valued inputs whose partial sums fit the
// dtype's mantissa are exact. Bytes per rank: 2(N-1)/N of the tensor in its dtype.
#include "algo/plan.h"

namespace equarx::algo {

codec::WireSpec PlanArgs::RawRs() const {
  return codec::WireSpec{f32_partials ? codec::Format::kRawF32 : codec::RawFormatOf(dtype), 0};
}
codec::WireSpec PlanArgs::RawAg() const { return codec::WireSpec{codec::RawFormatOf(dtype), 0}; }

Plan MakeRingPlan(const PlanArgs& a) {
  Plan p = MakeFullPlan(a);  // full's one-direction ring, with raw wires
  p.name = "ring";
  p.rs_wire = a.RawRs();
  p.ag_wire = a.RawAg();
  // Alignment only (raw formats have no blocks), unless a rotation needs whole rotation blocks.
  p.granule = a.rotation_block ? a.rotation_block : kDefaultBlock;
  return p;
}

}  // namespace equarx::algo
