// equarx algorithm selector (see selector.h). Tests pin algorithms through this same path.
#include "algo/selector.h"

namespace equarx::algo {

codec::WireSpec QuantizedWire(Codec codec, size_t block, Rounding rounding, uint64_t seed,
                              ScaleFormat scale) {
  codec::WireSpec w;
  w.block = uint32_t(block);
  w.scale = scale == ScaleFormat::kBF16       ? codec::kScaleBF16
            : scale == ScaleFormat::kTwoLevel ? codec::kScaleTwoLevel
                                              : codec::kScaleF32;
  w.rounding = rounding == Rounding::kStochastic ? codec::kRoundStochastic : codec::kRoundNearestEven;
  w.seed = seed;
  w.format = codec::BlockInfoOf(codec).format;
  return w;
}

Plan SelectPlan(const AllReduceOptions& o, DType dtype, size_t count, int ranks,
                const TuneTable& table) {
  Algorithm a = o.algorithm;
  Phases phases = o.phases;
  const size_t bytes = count * DTypeSize(dtype);
  if (a == Algorithm::kAuto) {
    const TuneRule rule = table.Lookup(ranks, dtype, bytes);
    a = rule.algorithm;
    phases = rule.phases;
  }
  if (IsQuantized(a) && bytes < o.quantize_min_bytes) a = Algorithm::kRing;
  PlanArgs args;
  args.dtype = dtype;
  args.count = count;
  args.ranks = ranks;
  args.phases = phases;
  args.quantized = QuantizedWire(o.codec, o.block, o.rounding, o.seed, o.scale);
  args.f32_partials = o.f32_partials;
  if (o.rotation == Rotation::kHadamard) args.rotation_block = RotationBlockOf(o);
  Plan p;
  switch (a) {
    case Algorithm::kFull: p = MakeFullPlan(args); break;
    case Algorithm::kFullBidir: p = MakeFullBidirPlan(args); break;
    case Algorithm::kSemi: p = MakeSemiPlan(args); break;
    case Algorithm::kNaiveFp8: p = MakeNaiveFp8Plan(args); break;
    case Algorithm::kTwoShot: p = MakeTwoShotPlan(args); break;
    case Algorithm::kRing:
    case Algorithm::kAuto:  // resolved above
    case Algorithm::kHierarchical:  // not one plan: hierarchical.cc runs it (the ring stands in)
      a = Algorithm::kRing;
      p = MakeRingPlan(args);
      break;
  }
  p.algorithm = a;
  return p;
}

Status PlanRotation(const Plan& plan, bool requested, Rotation asked, Algorithm chosen, bool* rotate) {
  *rotate = requested && !(asked == Rotation::kDefault && !IsQuantized(plan.algorithm));
  const bool raw_f16 = plan.rs_wire.format == codec::Format::kRawF16 ||
                       plan.ag_wire.format == codec::Format::kRawF16;
  if (!*rotate || !raw_f16) return Status::Ok();
  *rotate = false;
  if (asked == Rotation::kHadamard && chosen == plan.algorithm)
    return InvalidArgument("rotation hadamard with f16 data needs every hop quantized (an "
                           "unquantized f16 hop could overflow in the rotated domain): use "
                           "phases rs+ag, or bf16 or f32 data");
  return Status::Ok();
}

}  // namespace equarx::algo
