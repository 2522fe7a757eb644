// eval.cc — log-softmax statistics in f64 over the full vocabulary, rows in blocks so that
// only the exact logits of a chunk are kept whole.
#include "eval.h"

#include <algorithm>
#include <cmath>

namespace gemma3 {
namespace {

double LogSumExp(const float* x, size_t n, size_t* argmax) {
  float mx = x[0];
  size_t am = 0;
  for (size_t i = 1; i < n; ++i)
    if (x[i] > mx) { mx = x[i]; am = i; }
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(x[i]) - mx);
  *argmax = am;
  return mx + std::log(s);
}

}  // namespace

double QualityAccum::PerplexityExact() const { return positions ? std::exp(nll_exact / positions) : 0; }
double QualityAccum::Perplexity() const { return positions ? std::exp(nll_run / positions) : 0; }
double QualityAccum::Top1Agreement() const { return positions ? static_cast<double>(agree) / positions : 0; }
double QualityAccum::MeanKl() const { return positions ? kl_sum / positions : 0; }

void ComputeExact(const LmHead& head, const std::vector<float>& hidden,
                  const std::vector<int32_t>& tokens, int threads, ExactChunk* out) {
  out->tokens = tokens;
  out->logits.resize(tokens.size() * head.vocab());
  head.Logits(hidden.data(), tokens.size(), out->logits.data(), threads);
}

void CompareRun(const LmHead& head, const ExactChunk& exact, const std::vector<float>& hidden,
                int threads, QualityAccum* acc) {
  const size_t T = exact.tokens.size(), V = head.vocab();
  if (T < 2) return;
  const size_t d = hidden.size() / T;
  constexpr size_t kRows = 48;
  std::vector<float> logits(kRows * V);
  for (size_t r0 = 0; r0 + 1 < T; r0 += kRows) {
    size_t rows = std::min(kRows, T - 1 - r0);
    head.Logits(hidden.data() + r0 * d, rows, logits.data(), threads);
    std::vector<double> kl(rows), nll_e(rows), nll_r(rows);
    std::vector<char> agree(rows);
    ParallelFor(rows, threads, [&](size_t a, size_t b) {
      for (size_t r = a; r < b; ++r) {
        const float* q = logits.data() + r * V;
        const float* p = exact.logits.data() + (r0 + r) * V;
        size_t am_p, am_q;
        double lse_p = LogSumExp(p, V, &am_p), lse_q = LogSumExp(q, V, &am_q);
        double s = 0;
        for (size_t i = 0; i < V; ++i) {
          double lp = p[i] - lse_p, lq = q[i] - lse_q;
          s += std::exp(lp) * (lp - lq);
        }
        size_t target = static_cast<size_t>(exact.tokens[r0 + r + 1]);
        kl[r] = std::max(0.0, s);
        nll_e[r] = lse_p - p[target];
        nll_r[r] = lse_q - q[target];
        agree[r] = am_p == am_q;
      }
    });
    for (size_t r = 0; r < rows; ++r) {
      acc->positions++;
      acc->agree += agree[r];
      acc->nll_exact += nll_e[r];
      acc->nll_run += nll_r[r];
      acc->kl_sum += kl[r];
      acc->kl_max = std::max(acc->kl_max, kl[r]);
    }
  }
}

}  // namespace gemma3
