// equarx tools — the documented error bound of every AllReduce configuration: per element, an
// upper bound of |result - exact f64 sum| that a correct call never exceeds. One
// implementation shared by the tests' oracle (tests/support/oracle.h) and the tools that
// report #wrong (equarx-perf, equarx-accuracy): #wrong = elements outside this bound, so 0
// means correct on every path. Derivation in error_bound.cc; docs/algorithms.md has the
// error growth per algorithm. Depends on the library (codec reference, resolver); the
// library never depends on this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "equarx/options.h"
#include "equarx/types.h"

namespace equarx::tools {

/// Largest error of one encode of the options' codec and rounding, as a fraction of the
/// block's absmax.
double EncodeErrorPerAbsmax(const AllReduceOptions& o);
/// How much larger the error may be in a block that holds NaN/Inf (coded with a smaller
/// range, docs/wire_format.md): Q / Q_flag.
double FlaggedBlockFactor(Codec c);

/// The options with the scale format and block a call runs (ScaleOf, BlockOf: the codec's
/// defaults where left unset); other fields unchanged.
AllReduceOptions WithCodecDefaults(const AllReduceOptions& o);

/// Whether a call with these options on `ranks` ranks runs rotated (finite inputs assumed):
/// rotation hadamard, or default where the codec's default is hadamard and the algorithm
/// quantizes. `o.algorithm` must be resolved (ResolveForBound) for `auto`.
bool RotationApplies(const AllReduceOptions& o, int ranks);

/// The options with the scale format, block, algorithm, phases and rotation the library's
/// resolver (algo/resolve.h) decides for a call of `count` elements on `ranks` ranks of a
/// communicator whose ranks_per_host() is `hosts` (the hosts' layout its data path found):
/// the codec's default scale and block, auto's pick and the quantize_min_bytes gate, and the
/// rotation as hadamard or none. Other fields unchanged (hierarchical: only the scale, block
/// and ranks_per_host resolved).
AllReduceOptions ResolveForBound(const AllReduceOptions& o, DType dtype, size_t count, int ranks,
                                 uint32_t hosts = 1);

/// The bound for the segment [offset, offset + count) of a tensor: x[r] holds rank r's `count`
/// inputs (values of `dtype`, exact in f32). `offset` must be a multiple of o.block, and the
/// segment must end on a block boundary or at the tensor's end (the block grid, and the
/// rotation's, is anchored at element 0). Inputs must be finite. `o` as ResolveForBound
/// returns it. Algorithm hierarchical: o.ranks_per_host resolved (0 reads as 1); the bound
/// of its inner algorithm on the host sums (error_bound.cc). Writes `count` bounds to `bound`.
void ErrorBound(const std::vector<const float*>& x, size_t count, uint64_t offset,
                const AllReduceOptions& o, DType dtype, double* bound);

/// The bound of error feedback's conservation (docs/algorithms.md, "Error feedback, telemetry,
/// stochastic rounding"): |sum over ranks of new residuals + result - sum over ranks of (input +
/// old residual)| per element i, from mag[i] = sum over ranks of |input| + |old residual|.
/// Unrotated (`rotation_block` 0): 8 (ranks + 1) 2^-24 mag[i]; rotated, with rotation blocks of
/// `rotation_block` elements anchored at element 0: 64 2^-24 (mag[i] + M / 8), M the sum of mag
/// over i's block. Writes mag.size() bounds to `bound`.
void ConservationBound(const std::vector<double>& mag, int ranks, size_t rotation_block, double* bound);

/// Elements of a segment (as ErrorBound) whose result got[i] (f32 values of the dtype) is
/// outside the bound of the exact sum exact[i]: |got - exact| > bound, or got not finite.
size_t CountOutsideBound(const std::vector<const float*>& x, size_t count, uint64_t offset,
                         const AllReduceOptions& o, DType dtype, const double* exact,
                         const float* got);

}  // namespace equarx::tools
