// equarx algorithm selector (see selector.h). Tests pin algorithms through this same path.
#include "algo/selector.h"

namespace equarx::algo {

codec::WireSpec QuantizedWire(Codec codec, size_t block) {
  switch (codec) {
    case Codec::kInt8: break;
  }
  return codec::WireSpec{codec::Format::kInt8Block, uint32_t(block)};
}

Plan SelectPlan(const AllReduceOptions& o, DType dtype, size_t count, int ranks) {
  Algorithm a = o.algorithm;
  if (IsQuantized(a) && count * DTypeSize(dtype) < o.quantize_min_bytes) a = Algorithm::kRing;
  PlanArgs args;
  args.dtype = dtype;
  args.count = count;
  args.ranks = ranks;
  args.phases = o.phases;
  args.quantized = QuantizedWire(o.codec, o.block);
  args.f32_partials = o.f32_partials;
  switch (a) {
    case Algorithm::kRing: return MakeRingPlan(args);
    case Algorithm::kFull: return MakeFullPlan(args);
    case Algorithm::kFullBidir: return MakeFullBidirPlan(args);
    case Algorithm::kSemi: return MakeSemiPlan(args);
    case Algorithm::kNaiveFp8: return MakeNaiveFp8Plan(args);
    case Algorithm::kTwoShot: return MakeTwoShotPlan(args);
  }
  return MakeRingPlan(args);
}

}  // namespace equarx::algo
