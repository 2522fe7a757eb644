// Test data and oracles: seeded generators, typed buffers, the f64 exact sum and the
// analytic error bound of every configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "equarx/options.h"
#include "equarx/types.h"
#include "error_bound.h"

namespace equarx::testing {

/// Deterministic generator (splitmix64), the same numbers on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next();
  double Uniform();  ///< [0, 1)
  double Normal();   ///< N(0, 1), Box-Muller

 private:
  uint64_t s_;
};

/// Elements stored in a dtype, with f64 access for oracles.
struct Buffer {
  DType dtype = DType::kFloat32;
  std::vector<uint8_t> bytes;

  Buffer() = default;
  Buffer(DType t, size_t n) : dtype(t), bytes(n * DTypeSize(t)) {}
  size_t size() const { return bytes.size() / DTypeSize(dtype); }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  double Get(size_t i) const;
  void Set(size_t i, double v);  ///< rounds to the dtype (nearest even)
  bool operator==(const Buffer& o) const { return dtype == o.dtype && bytes == o.bytes; }
};

/// Per-rank inputs: N(0,1) scaled by `scale`, or small integers if `integers`.
std::vector<Buffer> MakeInputs(int ranks, size_t n, DType dtype, uint64_t seed,
                               bool integers = false, double scale = 1.0);

/// Options of algorithm hierarchical: hosts of `ranks_per_host` ranks (0: from
/// EQUARX_RANKS_PER_HOST), `inner` the algorithm across them; everything else the default.
inline AllReduceOptions HierarchicalOptions(Algorithm inner, uint32_t ranks_per_host = 0) {
  AllReduceOptions o;
  o.algorithm = Algorithm::kHierarchical;
  o.inner = inner;
  o.ranks_per_host = ranks_per_host;
  return o;
}

/// Exact sum over ranks in f64.
std::vector<double> ExactSum(const std::vector<Buffer>& inputs);

// The bound's building blocks (tools/common/error_bound.h, one implementation for the tests
// and the tools).
using tools::EncodeErrorPerAbsmax;
using tools::FlaggedBlockFactor;
using tools::RotationApplies;

/// Per element, an upper bound of |result - exact| for this configuration on these inputs
/// (tools::ErrorBound on the whole tensor, `auto` resolved as the library resolves it; the
/// derivation is in tools/common/error_bound.cc). Inputs must be finite. Algorithm
/// hierarchical (o.ranks_per_host as resolved, 0 read as `hosts`; its inner algorithm not auto):
/// |exact - the sum of the host sums| (formed as the schedule forms them: f32 in local-rank
/// order, rounded to the dtype) plus the inner algorithm's bound on the host sums (the
/// largest over the plans an inner `auto` may pick).
/// `hosts`: the communicator's ranks_per_host() (0: an in-process group, one host of all the
/// ranks).
std::vector<double> ErrorBound(const std::vector<Buffer>& inputs, const AllReduceOptions& o,
                               DType dtype, uint32_t hosts = 0);

/// Mean squared error of `result` against `reference` rounded to the result's dtype.
double MseAgainstRounded(const Buffer& result, const std::vector<double>& reference);

}  // namespace equarx::testing
