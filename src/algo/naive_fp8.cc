// equarx `naive_fp8` — the paper's naive fp8 reference: cast, no scales, sum in fp8.
//
// Every contribution is cast to fp8 e5m2 (1 sign, 5 exponent, 2 mantissa bits) with no
// scale; the ring RS adds two e5m2 values per hop (exact in f32) and rounds the partial back
// to e5m2; the AG forwards the owner's e5m2 shard. With 2 mantissa bits each rounding costs
// up to 2^-3 relative, and N of them pile up: MSE ~0.13 on N(0,1) at N = 8 (the paper's
// figure), two orders of magnitude above the block-scaled int8 schedules. It exists to show
// why scales matter, not to be used.
#include "algo/plan.h"

namespace equarx::algo {

Plan MakeNaiveFp8Plan(const PlanArgs& a) {
  Plan p = MakeRingPlan(a);
  p.name = "naive_fp8";
  p.rs_wire = codec::WireSpec{codec::Format::kRawE5M2, 0};
  p.ag_wire = p.rs_wire;
  p.precast_e5m2 = true;
  return p;
}

}  // namespace equarx::algo
