// equarx algorithm plans: every ring-shaped AllReduce as data.
//
// An AllReduce here is a reduce-scatter (RS) followed by an all-gather (AG), each made of
// *lanes*. A lane is a chain pattern over one region of the tensor, which is cut into N
// shards (shard c is owned by rank c), with a direction d (+1: rank r sends to r+1, -1: to
// r-1) and a number of steps T:
//   RS lane, send step t (0..T-1): rank r sends its partial sum of shard r + d*(T - t)
//     (mod N): at t = 0 its own contribution, encoded; later decode(received) + own
//     contribution, re-encoded (in f32, fused). The last receive (step T-1) is shard r itself:
//     the owner adds it to its own contribution (and to the other lane's chain, if two lanes
//     share the region, in lane order).
//   AG lane, send step t: rank r sends shard r - d*t: its own final shard encoded once at
//     t = 0, later the bytes it received one step before, forwarded unchanged.
// An all-to-all plan (two_shot.cc) has one lane per peer offset d = 1 .. N-1 in each phase,
// each of one step in direction d: rank r sends its contribution to shard r+d straight to
// its owner, and its final shard straight to rank r+d (LaneAt). Its owner sums in rank order
// instead of lane order.
// The algorithm files (ring.cc, full.cc, full_bidir.cc, semi.cc, naive_fp8.cc, two_shot.cc)
// only choose lanes and wire formats; executor.cc runs any plan with pipelined microshards.
#pragma once

#include <algorithm>
#include <cstddef>

#include "algo/partition.h"
#include "common/worker_pool.h"
#include "codec/codec.h"
#include "equarx/options.h"
#include "equarx/status.h"
#include "transport/transport.h"

namespace equarx::algo {

/// Scratch every call may use whatever its size (RunArgs::scratch_floor).
inline constexpr size_t kScratchFloor = size_t(64) << 20;

struct Lane {
  int region = 0;  ///< index into Plan::regions
  int dir = 1;     ///< +1 or -1
  int steps = 0;   ///< T; 0 = idle lane
};

struct Plan {
  const char* name = "";
  Algorithm algorithm = Algorithm::kRing;  ///< what SelectPlan resolved (auto, the size gate)
  Phases phases = Phases::kRSAG;           ///< the quantized phases it resolved (auto's rule)
  Range regions[2];
  int num_regions = 1;
  Lane rs[2];
  int num_rs = 1;
  Lane ag[2];
  int num_ag = 1;
  codec::WireSpec rs_wire;
  codec::WireSpec ag_wire;
  size_t granule = kDefaultBlock;  ///< block size of the partition
  bool precast_e5m2 = false;       ///< naive fp8: contributions are cast to e5m2 first
  bool all_to_all = false;         ///< two-shot: one lane per peer (LaneAt), sums in rank order
  /// one_shot (one_shot.cc): every rank sends its whole contribution, coded as rs_wire, to
  /// every peer and sums all N in rank order; no lanes, no all-gather.
  bool one_shot = false;
  /// recursive_doubling (recursive_doubling.cc), a one_shot plan whose contributions meet in
  /// log2 N rounds of pairs instead of one all-to-all step: rs_wire and ag_wire are raw f32.
  bool recursive_doubling = false;
  DType dtype = DType::kFloat32;  ///< the call's (SelectPlan): its message is count * size
};

/// Elements of the call a plan was made for.
inline size_t PlanCount(const Plan& p) { return p.regions[p.num_regions - 1].end(); }

/// The most scratch a call of `count` elements of `dtype` uses: `floor` (RunArgs::scratch_floor)
/// or a quarter of the message, whichever is more. The executor runs a call that would need
/// more in waves (executor.cc), one_shot in pieces (one_shot.cc), hierarchical in chunk groups
/// (hierarchical.cc).
inline size_t ScratchBound(DType dtype, size_t count, size_t floor) {
  return std::max(floor, count * DTypeSize(dtype) / 4);
}
inline size_t ScratchBound(const Plan& p, size_t floor) { return ScratchBound(p.dtype, PlanCount(p), floor); }

/// The fewest parts k in [1, most] whose scratch need(k) is within `bound` (`most` if none):
/// from the estimate need(1) / bound up, one at a time. The executor's waves and one_shot's
/// pieces are counted so.
template <class Need>
size_t FewestParts(size_t bound, size_t most, Need need) {
  const size_t whole = need(size_t(1));
  if (whole <= bound) return 1;
  size_t k = std::min(most, (whole + bound - 1) / bound);
  while (k < most && need(k) > bound) ++k;
  return std::max<size_t>(k, 1);
}

/// Everything one rank needs to run a plan.
struct RunArgs {
  transport::Transport* transport = nullptr;
  DType dtype = DType::kFloat32;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  size_t microshards = 0;  ///< as asked; 0: by size (PlanMicroshards)
  uint64_t tag_base = 0;
  transport::Deadline deadline;
  ExecutionMode mode = ExecutionMode::kNormal;
  /// Error feedback (AllReduceExtras::residual): `count` f32, or null.
  float* residual = nullptr;
  /// Encode telemetry of this rank's call, or null.
  codec::EncodeStats* stats = nullptr;
  /// Rotation of the contributions (block 0: none); see contribution.h.
  codec::RotationSpec rotation;
  /// With a guarded rotation (rotation.guard): set to whether any result of this rank's
  /// inverse rotations was NaN or Inf (every element of the output passes through one), when
  /// the call succeeds. Null otherwise.
  bool* rotated_nonfinite = nullptr;
  /// Index of element 0 of this call in a larger tensor (hierarchical.cc runs one call per
  /// shard): rotation blocks are numbered from the larger tensor's element 0. Block-aligned.
  size_t element_offset = 0;
  /// Threads for the codec kernels (option `threads`), or null: one thread.
  common::WorkerPool* pool = nullptr;
  /// The scratch the call may use whatever its size (ScratchBound): kScratchFloor, less for
  /// hierarchical's inner calls and in tests. Every rank passes the same.
  size_t scratch_floor = kScratchFloor;
};

/// The wire spec of one encode: `w` with the stochastic-rounding stream of the hop that
/// encodes it (phase 0 = RS, 1 = AG; lane; step; encoding rank) and `offset`, the absolute
/// index of the segment's first element. Every encode of a call gets distinct random bits;
/// round-to-nearest ignores both fields.
inline codec::WireSpec HopWire(codec::WireSpec w, int phase, int lane, int step, int rank,
                               size_t offset) {
  w.stream = (uint64_t(phase) << 60) | (uint64_t(lane) << 56) | (uint64_t(uint32_t(step)) << 24) |
             uint64_t(uint32_t(rank));
  w.offset = offset;
  return w;
}

/// Scratch reused across calls (grow-only; the hot path allocates nothing once warm).
class Scratch;

/// What the algorithm builders need to know about a call.
struct PlanArgs {
  DType dtype = DType::kFloat32;
  size_t count = 0;
  int ranks = 2;
  Phases phases = Phases::kRSAG;
  codec::WireSpec quantized;  ///< wire of the quantized phases
  bool f32_partials = false;  ///< unquantized RS hops carry f32 instead of the dtype
  /// The rotation block where the plan may rotate (a quantized plan with the rotation, an
  /// unquantized one when the caller asked for it), else 0: the ring then cuts its shards on
  /// rotation blocks (contribution.h rotates whole segments).
  size_t rotation_block = 0;

  codec::WireSpec RawRs() const;  ///< the wire of an unquantized RS hop
  codec::WireSpec RawAg() const;  ///< the wire of an unquantized AG hop (the dtype)
};

// One builder per algorithm file, one row each in algorithms.inc. `ranks` >= 2.
#define EQUARX_ALGORITHM(value, builder, auto_candidate, twin) Plan builder(const PlanArgs& a);
#include "algo/algorithms.inc"
#undef EQUARX_ALGORITHM

using PlanBuilder = Plan (*)(const PlanArgs&);
/// The builder of a flat algorithm (its row of algorithms.inc), or null for auto and
/// hierarchical.
inline PlanBuilder BuilderOf(Algorithm a) {
#define EQUARX_ALGORITHM(value, builder, auto_candidate, twin) \
  if (a == Algorithm::value) return builder;
#include "algo/algorithms.inc"
#undef EQUARX_ALGORITHM
  return nullptr;
}
/// What the size gate runs instead of a quantized algorithm `a` (its row's twin).
inline Algorithm UnquantizedTwin(Algorithm a) {
#define EQUARX_ALGORITHM(value, builder, auto_candidate, twin) \
  if (a == Algorithm::value) return Algorithm::twin;
#include "algo/algorithms.inc"
#undef EQUARX_ALGORITHM
  return Algorithm::kRing;
}
/// fn(a) for every algorithm auto may choose, in the registry's order.
template <class Fn>
void ForEachAutoCandidate(Fn fn) {
#define EQUARX_ALGORITHM(value, builder, auto_candidate, twin) \
  if (auto_candidate) fn(Algorithm::value);
#include "algo/algorithms.inc"
#undef EQUARX_ALGORITHM
}

/// Runs `plan` on this rank (executor.cc; one_shot.cc for a one_shot plan). All ranks must run
/// the same plan.
Status Execute(const Plan& plan, const RunArgs& args, Scratch* scratch);
Status ExecuteOneShot(const Plan& plan, const RunArgs& args, Scratch* scratch);

/// The lanes of phase 0 (RS) or 1 (AG) of `plan` on `ranks` ranks: the plan's own, or for an
/// all-to-all plan one per peer offset (lane l: region 0, direction l + 1, one step).
inline int NumLanes(const Plan& plan, int phase, int ranks) {
  return plan.all_to_all ? ranks - 1 : (phase == 0 ? plan.num_rs : plan.num_ag);
}
inline Lane LaneAt(const Plan& plan, int phase, int l) {
  return plan.all_to_all ? Lane{0, l + 1, 1} : (phase == 0 ? plan.rs[l] : plan.ag[l]);
}

/// The microshards per shard the executor cuts a call of `plan` on `ranks` into: `asked`, or
/// with 0 one per kMicroshardElements of its largest shard, 1 to kDefaultMicroshards
/// (executor.cc). One message per microshard and step.
size_t PlanMicroshards(const Plan& plan, int ranks, size_t asked);

/// Bytes rank `rank` sends when running `plan` with `microshards` (no communication): the
/// executor's own step walk over its sends (executor.cc, ForEachStep), counted instead of sent.
/// `scratch_floor` as the call's RunArgs; `ef`: the call has error feedback (its staged
/// contribution can add waves, whose messages can differ by a byte in size where a message's
/// codes or sub-scales end on half a byte).
uint64_t PlanWireBytes(const Plan& plan, int rank, int ranks, size_t microshards,
                       size_t scratch_floor = kScratchFloor, bool ef = false);

/// The waves a call of `plan` with `microshards` on `ranks` runs in (executor.cc, "Waves"): 1
/// unless its buffers would pass ScratchBound.
size_t PlanWaves(const Plan& plan, int ranks, size_t microshards, size_t scratch_floor = kScratchFloor,
                 bool ef = false);

}  // namespace equarx::algo
