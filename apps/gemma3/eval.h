// eval.h — quality of a run against the exact one, from the logits of both:
// perplexity of each on the text, top-1 (argmax) agreement, and the mean (and max) KL
// divergence KL(exact || run) of the next-token distributions, over every predicted position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model.h"

namespace gemma3 {

struct QualityAccum {
  size_t positions = 0, agree = 0;
  double nll_exact = 0, nll_run = 0, kl_sum = 0, kl_max = 0;
  double PerplexityExact() const;
  double Perplexity() const;
  double Top1Agreement() const;
  double MeanKl() const;
};

/// Exact logits of one chunk, kept for comparing several runs of the same tokens.
struct ExactChunk {
  std::vector<int32_t> tokens;
  std::vector<float> logits;  ///< [T][vocab]
};

void ComputeExact(const LmHead& head, const std::vector<float>& hidden,
                  const std::vector<int32_t>& tokens, int threads, ExactChunk* out);

/// Adds positions 0..T-2 (each predicts tokens[t+1]) of a run's hidden states to `acc`.
void CompareRun(const LmHead& head, const ExactChunk& exact, const std::vector<float>& hidden,
                int threads, QualityAccum* acc);

}  // namespace gemma3
