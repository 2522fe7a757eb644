// Thread-rank harness: runs one function per rank of a new in-process group through the tools'
// launcher (tools/common/world.h, RunOnRanks; tests on a group they keep call that directly),
// and the checks built on it: one AllReduce on every rank, bits across SIMD targets, agreement
// and the error bound. Also the hex text of bytes, to compare them with published test vectors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "equarx/communicator.h"
#include "world.h"

namespace equarx::testing {

/// Lower-case hex of the `n` bytes at `p`.
std::string HexOf(const void* p, size_t n);

/// An N-rank in-process group whose transports report hosts of `ranks_per_host` ranks
/// (CreateInProcessGroup's report one host, ranks_per_host = N): threads as ranks that run
/// what ranks on those hosts run, e.g. the call check's tree across hosts (algo::ChecksByTree).
Status CreateInProcessGroupOnHosts(int n, int ranks_per_host, std::vector<std::unique_ptr<Communicator>>* out);

/// Creates an N-rank in-process group (on hosts of `ranks_per_host`; 0: one host, as
/// CreateInProcessGroup) and runs fn(comm) on every rank (tools::RunOnRanks). Returns each
/// rank's status, indexed by rank.
std::vector<Status> RunRanks(int n, const std::function<Status(Communicator&)>& fn, int ranks_per_host = 0);

struct Buffer;

/// One AllReduce of in[r] on every rank r of a new in-process group (in place when asked),
/// with per-rank error-feedback residuals and telemetry if given, on hosts of
/// `ranks_per_host` (0: one host); every rank must succeed (a gtest failure otherwise).
/// Returns every rank's output.
std::vector<Buffer> ReduceAll(const std::vector<Buffer>& in, const AllReduceOptions& o, bool in_place,
                              std::vector<std::vector<float>>* residuals = nullptr,
                              std::vector<AllReduceStats>* stats = nullptr, int ranks_per_host = 0);
/// The same with rank r in place where in_place[r] (one entry per rank).
std::vector<Buffer> ReduceAll(const std::vector<Buffer>& in, const AllReduceOptions& o,
                              const std::vector<bool>& in_place,
                              std::vector<std::vector<float>>* residuals = nullptr,
                              std::vector<AllReduceStats>* stats = nullptr, int ranks_per_host = 0);

/// Calls reduce() once per SIMD target the CPU supports (codec::ForceTarget) and expects rank
/// 0's output (reduce()[0]) bitwise the same on every one; then restores the best target.
void ExpectSameBitsOnEverySimdTarget(const std::function<std::vector<Buffer>()>& reduce,
                                     const std::string& what);

/// Every rank's output bitwise equal to rank 0's, and each element of rank 0's within the
/// configuration's error bound (support/oracle.h, ErrorBound) of the exact sum.
void ExpectAgreeAndWithinBound(const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                               const AllReduceOptions& o, const std::string& what);

}  // namespace equarx::testing
