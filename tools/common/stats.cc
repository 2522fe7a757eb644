// equarx tools — error statistics (see stats.h).
#include "stats.h"

#include <algorithm>
#include <cmath>

namespace equarx::tools {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = size_t(std::ceil(q * double(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

uint64_t Fnv1a64(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void ErrorAccumulator::Add(double ref, double got) {
  ++count_;
  const bool rf = std::isfinite(ref), gf = std::isfinite(got);
  if (rf && gf) {
    const double e = got - ref;
    if (e != 0.0) ++wrong_;
    ++finite_;
    sum_sq_err_ += e * e;
    sum_sq_ref_ += ref * ref;
    const double a = std::fabs(e);
    if (a > max_abs_) max_abs_ = a;
    return;
  }
  const bool same = (std::isnan(ref) && std::isnan(got)) || (!rf && !gf && ref == got);
  if (!same) {
    ++wrong_;
    ++nonfinite_;
  }
}

void ErrorAccumulator::Merge(const ErrorAccumulator& o) {
  count_ += o.count_;
  finite_ += o.finite_;
  wrong_ += o.wrong_;
  nonfinite_ += o.nonfinite_;
  sum_sq_err_ += o.sum_sq_err_;
  sum_sq_ref_ += o.sum_sq_ref_;
  if (o.max_abs_ > max_abs_) max_abs_ = o.max_abs_;
}

ErrorStats ErrorAccumulator::Finish() const {
  ErrorStats s;
  s.count = count_;
  s.finite = finite_;
  s.wrong = wrong_;
  s.nonfinite_mismatch = nonfinite_;
  s.max_abs = max_abs_;
  s.mse = finite_ ? sum_sq_err_ / double(finite_) : 0.0;
  if (sum_sq_ref_ > 0) s.rel_rms = std::sqrt(sum_sq_err_ / sum_sq_ref_);
  else s.rel_rms = sum_sq_err_ > 0 ? INFINITY : 0.0;
  return s;
}

ErrorStats CompareArrays(const double* ref, const float* got, size_t n) {
  ErrorAccumulator acc;
  for (size_t i = 0; i < n; ++i) acc.Add(ref[i], double(got[i]));
  return acc.Finish();
}

ErrorStats CompareArrays(const double* ref, const double* got, size_t n) {
  ErrorAccumulator acc;
  for (size_t i = 0; i < n; ++i) acc.Add(ref[i], got[i]);
  return acc.Finish();
}

}  // namespace equarx::tools
