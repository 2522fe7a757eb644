// equarx tools — the bf16 accuracy experiment (see experiment.h).
#include "experiment.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "error_bound.h"
#include "half.h"

namespace equarx::tools {
namespace {
constexpr size_t kChunk = size_t(1) << 16;
}

size_t ParallelChunks(size_t n, size_t chunk, const std::function<void(size_t, size_t, size_t)>& fn) {
  const size_t chunks = (n + chunk - 1) / chunk;
  const size_t threads =
      std::max<size_t>(1, std::min<size_t>({chunks, std::thread::hardware_concurrency(), 16}));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < chunks;) fn(k, k * chunk, std::min(n, (k + 1) * chunk));
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return chunks;
}

Status Bf16Experiment::Create(int ranks, size_t count, const GenSpec& gen,
                              std::unique_ptr<Bf16Experiment>* out) {
  auto e = std::unique_ptr<Bf16Experiment>(new Bf16Experiment());
  e->ranks_ = ranks;
  e->count_ = count;
  EQUARX_RETURN_IF_ERROR(InProcessGroup::Create(ranks, &e->group_));
  e->inputs_.assign(size_t(ranks), std::vector<uint16_t>(count));
  e->results_.assign(size_t(ranks), std::vector<uint16_t>(count));
  e->reference_.resize(count);
  ParallelChunks(count, kChunk, [&](size_t, size_t b, size_t end) {
    std::vector<float> tmp(end - b);
    for (int r = 0; r < ranks; ++r) {
      GenSpec g = gen;
      g.stream = uint64_t(r);
      Generate(g, b, end - b, tmp.data());
      F32ToBF16Array(tmp.data(), end - b, e->inputs_[size_t(r)].data() + b);
    }
    for (size_t i = b; i < end; ++i) {
      double s = 0;
      for (int r = 0; r < ranks; ++r) s += double(BF16ToF32(e->inputs_[size_t(r)][i]));
      e->reference_[i] = float(RoundF64ToBF16(s));
    }
  });
  *out = std::move(e);
  return Status::Ok();
}

Status Bf16Experiment::Run(const AllReduceOptions& options, RunResult* out, bool with_stats,
                           const std::vector<AllReduceExtras>* extras) {
  std::vector<const void*> send;
  std::vector<void*> recv;
  for (int r = 0; r < ranks_; ++r) {
    send.push_back(inputs_[size_t(r)].data());
    recv.push_back(results_[size_t(r)].data());
    std::fill(results_[size_t(r)].begin(), results_[size_t(r)].end(), uint16_t(0x7FC1));  // poison
  }
  *out = RunResult();
  EQUARX_RETURN_IF_ERROR(group_->AllReduce(send, recv, count_, DType::kBFloat16, options, &out->call, extras));
  out->first_bad_rank = FirstDifferentRank(recv, count_ * sizeof(uint16_t));
  if (!with_stats) return Status::Ok();
  const uint16_t* got = results_[0].data();
  Measure([got](size_t i) { return BF16ToF32(got[i]); }, out);
  out->outside_bound = CountOutsideBound(options);
  return Status::Ok();
}

size_t Bf16Experiment::CountOutsideBound(const AllReduceOptions& options) const {
  const AllReduceOptions o =
      ResolveForBound(options, DType::kBFloat16, count_, ranks_, group_->comm(0).ranks_per_host());
  const size_t chunk = (kChunk + o.block - 1) / o.block * o.block;  // whole blocks: the bound's grid
  const size_t chunks = (count_ + chunk - 1) / chunk;
  std::vector<size_t> wrong(chunks, 0);
  ParallelChunks(count_, chunk, [&](size_t k, size_t b, size_t end) {
    const size_t n = end - b;
    std::vector<std::vector<float>> x(static_cast<size_t>(ranks_), std::vector<float>(n));
    std::vector<const float*> xp;
    std::vector<double> exact(n, 0.0);
    std::vector<float> got(n);
    for (int r = 0; r < ranks_; ++r) {
      for (size_t i = 0; i < n; ++i) x[size_t(r)][i] = BF16ToF32(inputs_[size_t(r)][b + i]);
      for (size_t i = 0; i < n; ++i) exact[i] += x[size_t(r)][i];
      xp.push_back(x[size_t(r)].data());
    }
    for (size_t i = 0; i < n; ++i) got[i] = BF16ToF32(results_[0][b + i]);
    wrong[k] = tools::CountOutsideBound(xp, n, b, o, DType::kBFloat16, exact.data(), got.data());
  });
  size_t total = 0;
  for (size_t w : wrong) total += w;
  return total;
}

void Bf16Experiment::Measure(const std::function<float(size_t)>& got, RunResult* out) const {
  out->err = MeasureValues(got);
}

ErrorStats Bf16Experiment::MeasureValues(const std::function<float(size_t)>& got) const {
  const size_t chunks = (count_ + kChunk - 1) / kChunk;
  std::vector<ErrorAccumulator> parts(chunks);
  ParallelChunks(count_, kChunk, [&](size_t k, size_t b, size_t end) {
    for (size_t i = b; i < end; ++i) parts[k].Add(double(reference_[i]), double(got(i)));
  });
  ErrorAccumulator all;
  for (const ErrorAccumulator& p : parts) all.Merge(p);
  return all.Finish();
}

ErrorStats Bf16Experiment::MeasureAgainst(const std::vector<uint16_t>& ref) const {
  const uint16_t* got = results_[0].data();
  const size_t chunks = (count_ + kChunk - 1) / kChunk;
  std::vector<ErrorAccumulator> parts(chunks);
  ParallelChunks(count_, kChunk, [&](size_t k, size_t b, size_t end) {
    for (size_t i = b; i < end; ++i) parts[k].Add(double(BF16ToF32(ref[i])), double(BF16ToF32(got[i])));
  });
  ErrorAccumulator all;
  for (const ErrorAccumulator& p : parts) all.Merge(p);
  return all.Finish();
}

}  // namespace equarx::tools
