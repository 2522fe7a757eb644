// generate.h — greedy decode on one tensor-parallel rank, with a KV cache.
//
// The prompt runs as one forward step (prefill) that fills the cache; then each new token is
// one step of a single position that attends to the cache. Each step makes the model's two
// AllReduces per layer (of d_model x T values). The LM head is split over ranks by vocabulary:
// each rank computes the logits of its slice of tokens from its (replicated) final hidden
// state and takes the slice's argmax; the ranks then exchange one slot each (a sum over ranks
// of a vector that is zero outside the rank's slot, so every rank reads every slot exactly):
//   ok, the token the rank fed to this step, a hash of its final hidden state (two 32-bit
//   halves), its best logit, that logit's token id.
// Every rank picks the same next token from the same slots (highest logit, lowest id on ties:
// the single-rank argmax). The ranks agree when every slot has the same fed token and hash;
// a disagreement or a failed step on any rank is an error on every rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "equarx/status.h"
#include "model.h"

namespace gemma3 {

/// The most positions a run's KV cache may hold (prompt + new tokens - 1), whatever the
/// model's context: Gemma 3's longest context, 128K.
inline constexpr size_t kMaxPositions = size_t(1) << 17;

/// Sums n doubles over the ranks in place (every rank gets the same sums); false on failure.
/// A single rank's is the identity.
using Exchange = std::function<bool(double* v, size_t n)>;

struct GenerateResult {
  std::vector<int32_t> tokens;  ///< the generated tokens, in order
  double ttft_s = 0;            ///< prompt in to first token chosen (prefill + head + exchange)
  double prefill_s = 0;         ///< the prefill step alone (this rank)
  std::vector<double> token_s;  ///< each decode step: token i - 1 chosen to token i chosen
  double prefill_reduce_s = 0, decode_reduce_s = 0;  ///< time inside the reducer
  size_t prefill_reduce_calls = 0, decode_reduce_calls = 0;
  size_t prefill_reduce_values = 0, decode_reduce_values = 0;  ///< floats summed, all calls
  uint64_t hidden_hash = 0;  ///< FNV-1a of the last step's final hidden state (every rank's)
  /// CPU time of the decode steps outside the AllReduce calls and the token exchange, summed
  /// over the ranks: each rank's calling thread (with one GEMM thread per rank, all its
  /// work). The group's cores can run it no faster than this over their number.
  double decode_compute_cpu_s = 0;
};

/// One rank's decode state: its cache and buffers, kept across runs (a second run of the
/// same or a shorter length allocates nothing).
class RankGenerator {
 public:
  /// `model` is this rank's shard, `head` its vocabulary slice (the whole head on one rank).
  RankGenerator(const RankModel& model, const LmHead& head, int threads);
  /// Greedy generation of `new_tokens` tokens after `prompt`. Collective: every rank calls it
  /// with the same prompt, count and `warmup`; with `warmup`, an untimed run of the prompt and
  /// min(2, new_tokens) tokens comes first, through the same reducer and exchange.
  equarx::Status Run(const std::vector<int32_t>& prompt, size_t new_tokens, const Reducer& reduce,
                     const Exchange& exchange, GenerateResult* out, bool warmup = false);
  /// This rank's logits slice and final hidden state of the last step (tests).
  const std::vector<float>& logits() const { return logits_; }
  const std::vector<float>& hidden() const { return hidden_; }

 private:
  // Chooses the next token from the last hidden row (head, exchange); `fed` is the last
  // token of the step, `ok` whether the step succeeded here.
  equarx::Status Choose(int32_t fed, bool ok, const Exchange& exchange, int32_t* next, uint64_t* hash);

  const RankModel& model_;
  const LmHead& head_;
  int threads_;
  KvCache cache_;
  Workspace ws_;
  std::vector<float> hidden_, logits_;
  std::vector<double> slots_;
  double exchange_cpu_s_ = 0;  // CPU time of Choose's last exchange (this thread)
};

/// Nearest-rank percentile (p in (0, 100]) of v; 0 when empty.
double Percentile(std::vector<double> v, double p);

}  // namespace gemma3
