// equarx tools — the bf16 accuracy experiment shared by equarx-accuracy and equarx-demo.
//
// Setting (the paper's Table I, parameterised): `ranks` ranks each hold `count` values drawn
// from one distribution (seeded, stream = rank), rounded to bf16 (RNE). The reference is
// bf16(exact f64 sum of the bf16 inputs), rounded once, directly from f64. Each Run() does
// one out-of-place bf16 AllReduce on all ranks, checks every rank's result is bitwise equal
// to rank 0's, measures rank 0's result against the reference and counts its elements outside
// the configuration's error bound of the exact sum (#wrong).
// Buffers are uint16_t (bf16): inputs ranks*count, results ranks*count, reference count f32.
// Generation, the reference and the statistics run in parallel chunks with fixed merge
// order, so every number is independent of the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "equarx/options.h"
#include "equarx/status.h"
#include "group.h"
#include "random.h"
#include "stats.h"

namespace equarx::tools {

/// Runs fn(begin, end) over [0, n) in fixed chunks on up to hardware_concurrency threads;
/// chunk k covers [k*chunk, min(n, (k+1)*chunk)). Returns the number of chunks.
size_t ParallelChunks(size_t n, size_t chunk, const std::function<void(size_t k, size_t begin, size_t end)>& fn);

struct RunResult {
  ErrorStats err;            ///< rank 0's result vs bf16(exact sum); err.wrong = not bit-equal
  /// #wrong: elements of rank 0's result outside the configuration's error bound of the exact
  /// sum (error_bound.h, the tests' bound); 0 for every correct call.
  size_t outside_bound = 0;
  GroupCallResult call;      ///< time and wire bytes of the call
  int first_bad_rank = -1;   ///< a rank whose result differs bitwise from rank 0's, or -1
};

class Bf16Experiment {
 public:
  /// Generates the inputs and the reference. `gen.stream` is ignored (stream = rank).
  static Status Create(int ranks, size_t count, const GenSpec& gen, std::unique_ptr<Bf16Experiment>* out);

  int ranks() const { return ranks_; }
  size_t count() const { return count_; }
  InProcessGroup& group() { return *group_; }

  /// One AllReduce with `options` (and per-rank `extras`: error feedback, telemetry); fills
  /// `out` (statistics only if `with_stats`).
  Status Run(const AllReduceOptions& options, RunResult* out, bool with_stats = true,
             const std::vector<AllReduceExtras>* extras = nullptr);

  /// Rank r's bf16 input.
  const uint16_t* input(int r) const { return inputs_[size_t(r)].data(); }
  /// Rank r's bf16 result of the last Run.
  const uint16_t* result(int r) const { return results_[size_t(r)].data(); }
  /// Statistics of got(i) (an f32 value per element) against the reference.
  ErrorStats MeasureValues(const std::function<float(size_t)>& got) const;
  /// Statistics of rank 0's last result against another reference: `ref` holds `count`
  /// bf16 values (e.g. the unquantized bf16 ring's result, the paper's reference).
  ErrorStats MeasureAgainst(const std::vector<uint16_t>& ref) const;


 private:
  Bf16Experiment() = default;
  size_t CountOutsideBound(const AllReduceOptions& options) const;
  void Measure(const std::function<float(size_t)>& got, RunResult* out) const;
  int ranks_ = 0;
  size_t count_ = 0;
  std::unique_ptr<InProcessGroup> group_;
  std::vector<std::vector<uint16_t>> inputs_, results_;
  std::vector<float> reference_;  // bf16 values held in f32
};

}  // namespace equarx::tools
