// generate.cc — see generate.h.
#include "generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "stats.h"

namespace gemma3 {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A rank's slot in the exchange: ok, fed token, hash high, hash low, best logit, its token.
constexpr size_t kSlot = 6;

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

RankGenerator::RankGenerator(const RankModel& model, const LmHead& head, int threads)
    : model_(model), head_(head), threads_(threads) {}

equarx::Status RankGenerator::Choose(int32_t fed, bool ok, const Exchange& exchange, int32_t* next,
                                     uint64_t* hash) {
  const Shard& sh = model_.shard();
  const size_t d = static_cast<size_t>(model_.config().d_model);
  const float* row = hidden_.data();  // the caller put the step's last row first
  std::fill(slots_.begin(), slots_.end(), 0.0);
  double* mine = slots_.data() + kSlot * static_cast<size_t>(sh.rank);
  mine[0] = ok ? 1 : 0;
  if (ok) {
    head_.Logits(row, 1, logits_.data(), threads_);
    size_t best = 0;
    for (size_t i = 1; i < logits_.size(); ++i)
      if (logits_[i] > logits_[best]) best = i;  // the first of equal maxima
    const uint64_t h = equarx::tools::Fnv1a64(row, d * sizeof(float));
    mine[1] = fed;
    mine[2] = static_cast<double>(h >> 32);
    mine[3] = static_cast<double>(h & 0xffffffffu);
    mine[4] = logits_.empty() ? -INFINITY : logits_[best];
    mine[5] = logits_.empty() ? -1 : static_cast<double>(head_.first() + best);
  }
  const double c0 = ThreadCpuSeconds();
  const bool exchanged = exchange(slots_.data(), slots_.size());
  exchange_cpu_s_ = ThreadCpuSeconds() - c0;
  if (!exchanged) return equarx::RemoteError("the exchange of the chosen tokens between ranks failed");
  const size_t pos = cache_.length;
  for (int r = 0; r < sh.ranks; ++r)
    if (slots_[kSlot * r] != 1)
      return equarx::RemoteError("the forward step up to position " + std::to_string(pos) + " failed on rank " +
                                 std::to_string(r));
  int32_t chosen = -1;
  double best = -INFINITY;
  for (int r = 0; r < sh.ranks; ++r) {
    const double* s = slots_.data() + kSlot * r;
    if (s[1] != slots_[1] || s[2] != slots_[2] || s[3] != slots_[3])
      return equarx::Mismatch("ranks disagree after position " + std::to_string(pos) + ": rank " +
                              std::to_string(r) + (s[1] != slots_[1] ? " fed another token than" :
                                                   " holds another final hidden state than") + " rank 0");
    if (s[5] >= 0 && (chosen < 0 || s[4] > best)) {  // ties: the lowest rank, i.e. the lowest id
      chosen = static_cast<int32_t>(s[5]);
      best = s[4];
    }
  }
  if (chosen < 0) return equarx::Internal("no rank holds a slice of the vocabulary");
  *next = chosen;
  *hash = (static_cast<uint64_t>(slots_[2]) << 32) | static_cast<uint64_t>(slots_[3]);
  return equarx::Status::Ok();
}

equarx::Status RankGenerator::Run(const std::vector<int32_t>& prompt, size_t new_tokens,
                                  const Reducer& reduce, const Exchange& exchange, GenerateResult* out,
                                  bool warmup) {
  if (warmup && new_tokens > 0)
    if (equarx::Status st = Run(prompt, std::min<size_t>(new_tokens, 2), reduce, exchange, out); !st.ok()) return st;
  const Config& c = model_.config();
  const size_t d = static_cast<size_t>(c.d_model), P = prompt.size();
  if (P == 0) return equarx::InvalidArgument("the prompt is empty");
  if (new_tokens == 0) return equarx::InvalidArgument("no tokens to generate (--tokens 0)");
  for (size_t i = 0; i < P; ++i)
    if (prompt[i] < 0 || prompt[i] >= c.vocab)
      return equarx::InvalidArgument("prompt token " + std::to_string(i) + " (" + std::to_string(prompt[i]) +
                                     ") is outside the vocabulary of " + std::to_string(c.vocab));
  if (new_tokens > kMaxPositions || P - 1 > kMaxPositions - new_tokens)
    return equarx::InvalidArgument(std::to_string(P) + " prompt tokens + " + std::to_string(new_tokens) +
                                   " new exceed " + std::to_string(kMaxPositions) + " positions");
  const size_t capacity = P + new_tokens - 1;  // the last generated token is never fed
  if (cache_.capacity < capacity && !model_.InitCache(capacity, &cache_))
    return equarx::InvalidArgument("no memory for a KV cache of " + std::to_string(capacity) + " positions");
  cache_.length = 0;
  if (hidden_.size() < P * d) hidden_.resize(P * d);
  logits_.resize(head_.vocab());
  slots_.resize(kSlot * static_cast<size_t>(model_.shard().ranks));
  // Reset in place: a result reused for another run of at most the same length keeps its room.
  out->tokens.clear();
  out->token_s.clear();
  out->tokens.reserve(new_tokens);
  out->token_s.reserve(new_tokens);
  out->prefill_reduce_s = out->decode_reduce_s = 0;
  out->decode_reduce_calls = out->decode_reduce_values = 0;
  out->decode_compute_cpu_s = 0;

  const double t0 = Now();
  ForwardStats fs;
  bool ok = model_.Step(prompt.data(), P, &cache_, &ws_, reduce, threads_, hidden_.data(), &fs);
  out->prefill_s = Now() - t0;
  out->prefill_reduce_s = fs.reduce_s;
  out->prefill_reduce_calls = fs.reduce_calls;
  out->prefill_reduce_values = fs.reduce_calls * P * d;
  if (ok && P > 1) std::copy_n(hidden_.data() + (P - 1) * d, d, hidden_.data());  // the last row first
  int32_t next = -1;
  if (equarx::Status st = Choose(prompt.back(), ok, exchange, &next, &out->hidden_hash); !st.ok()) return st;
  out->ttft_s = Now() - t0;
  out->tokens.push_back(next);
  for (size_t i = 1; i < new_tokens; ++i) {
    const double ts = Now(), cs = ThreadCpuSeconds();
    const int32_t fed = next;
    fs = ForwardStats{};
    ok = model_.Step(&fed, 1, &cache_, &ws_, reduce, threads_, hidden_.data(), &fs);
    out->decode_reduce_s += fs.reduce_s;
    out->decode_reduce_calls += fs.reduce_calls;
    out->decode_reduce_values += fs.reduce_calls * d;
    if (equarx::Status st = Choose(fed, ok, exchange, &next, &out->hidden_hash); !st.ok()) return st;
    out->token_s.push_back(Now() - ts);
    out->decode_compute_cpu_s += ThreadCpuSeconds() - cs - fs.reduce_cpu_s - exchange_cpu_s_;
    out->tokens.push_back(next);
  }
  if (!exchange(&out->decode_compute_cpu_s, 1))  // every rank's, summed
    return equarx::RemoteError("the exchange of the ranks' decode CPU times failed");
  return equarx::Status::Ok();
}

}  // namespace gemma3
