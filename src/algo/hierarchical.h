// equarx `hierarchical` — several ranks per host: only the bytes between hosts are quantized.
// The schedule is in hierarchical.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "algo/plan.h"
#include "algo/resolve.h"
#include "algo/scratch.h"
#include "equarx/options.h"

namespace equarx::algo {

/// Where a rank sits: hosts of `per_host` ranks in rank order, the last one possibly smaller.
struct HostLayout {
  int ranks = 1, per_host = 1, hosts = 1;
  HostLayout(int ranks, int per_host);
  int HostOf(int rank) const { return rank / per_host; }
  int First(int host) const { return host * per_host; }
  int Size(int host) const;  ///< ranks on `host`
  int Shards() const { return per_host < ranks ? per_host : ranks; }
  /// The rank of `host` that owns shard `s` (local rank s mod the host's size).
  int Owner(int host, int s) const { return First(host) + s % Size(host); }
};

/// One intra-host message of the schedule (hierarchical.cc).
struct IntraOp {
  bool send;
  int peer;
  uint64_t tag;
  void* buf;
  size_t bytes;
  long after = -1;    ///< a step-3 receive of an in-place call: posted once this send completed
  bool held = false;  ///< an owner's step-3 send: posted once its chunk is finished
};

/// What the schedule keeps from call to call, so that a warm call allocates nothing: its
/// buffers and requests (`bytes`), and its lists.
struct HierarchicalScratch {
  Scratch bytes;
  std::vector<IntraOp> ops;
  std::vector<uint8_t> posted;
  std::vector<size_t> first;  // per (shard, chunk of the group): its first message
  std::vector<int> members;   // per shard, the owners of its inner call
};

/// Runs the hierarchical AllReduce on this rank. `r`: the call resolved (resolve.h); `args` as
/// for Execute (no error feedback; args.rotation set when the call would rotate: each shard's
/// inner plan rotates as InnerPlan says). `inner` is the scratch of the inner algorithm's
/// calls, `own` this schedule's.
Status ExecuteHierarchical(const Resolved& r, const RunArgs& args, Scratch* inner, HierarchicalScratch* own);

/// Bytes rank `rank` of `ranks` sends in that schedule (no communication).
/// `scratch_floor` as the call's RunArgs.
uint64_t HierarchicalWireBytes(const Resolved& r, DType dtype, size_t count, int rank, int ranks,
                               size_t scratch_floor = kScratchFloor);

/// The chunks the pipeline cuts shard `s` of a `count`-element call over `ranks` ranks into
/// (each chunk has its own inner AllReduce), in order.
std::vector<Range> HierarchicalChunks(const AllReduceOptions& o, DType dtype, size_t count, int ranks, int s);

/// The checks every rank makes before any data moves (the same verdict on every rank: they
/// look at every shard's inner plan, not only the rank's own): InnerPlan's, for a rotation
/// the caller asked for with an unquantized f16 hop across hosts. Part of Resolve.
Status CheckHierarchical(const Resolved& r, DType dtype, size_t count, int ranks);

}  // namespace equarx::algo
