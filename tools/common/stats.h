// equarx tools — error statistics of a result against an f64 reference.
//
// The reference is whatever the caller compares against (e.g. bf16(exact f64 sum) for the
// paper's MSE). Per element: err = got - ref. Finite pairs enter MSE, RMS and max |err|;
// `wrong` counts elements that are not exactly equal (NaN matches NaN, Inf matches the same
// Inf); a pair where only one side is finite, or Infs of different sign, counts in `wrong`
// and `nonfinite_mismatch` and is kept out of the sums.
//   MSE      = sum(err^2) / n_finite
//   rel_rms  = sqrt(sum(err^2) / sum(ref^2))     (0 when both are 0)
//   max_abs  = max |err|
// Sums are f64 and accumulated in a fixed order (Merge in a fixed order for parallel use).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace equarx::tools {

struct ErrorStats {
  size_t count = 0;               ///< elements compared
  size_t finite = 0;              ///< elements in the sums
  size_t wrong = 0;               ///< elements not exactly equal to the reference
  size_t nonfinite_mismatch = 0;  ///< wrong elements where finiteness differs
  double mse = 0;
  double rel_rms = 0;
  double max_abs = 0;
};

class ErrorAccumulator {
 public:
  void Add(double ref, double got);
  /// Adds another accumulator's elements (call in a fixed order for reproducible sums).
  void Merge(const ErrorAccumulator& other);
  ErrorStats Finish() const;

 private:
  size_t count_ = 0, finite_ = 0, wrong_ = 0, nonfinite_ = 0;
  double sum_sq_err_ = 0, sum_sq_ref_ = 0, max_abs_ = 0;
};

/// Convenience: statistics of n elements.
ErrorStats CompareArrays(const double* ref, const float* got, size_t n);
ErrorStats CompareArrays(const double* ref, const double* got, size_t n);

/// Median of timings (the mean of the middle two for an even count; 0 when empty).
double Median(std::vector<double> v);
/// The q-quantile (0 < q <= 1) of timings: the smallest value that at least a fraction q of
/// them do not exceed (nearest rank; 0 when empty). Percentile(v, 0.99) is the p99.
double Percentile(std::vector<double> v, double q);

/// 64-bit FNV-1a of `bytes` bytes: compares results between ranks or runs without moving them.
uint64_t Fnv1a64(const void* data, size_t bytes);

}  // namespace equarx::tools
