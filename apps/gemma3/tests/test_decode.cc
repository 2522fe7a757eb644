// test_decode.cc — decode with a KV cache on the synthetic model, against the independent
// oracle of recomputing: the full-sequence forward pass (RankModel::Forward, one step from an
// empty cache) of the growing sequence, then the full LM head on its last row.
//   - a sequence run in pieces (prefill, single tokens, a chunk) gives bitwise the rows of one
//     forward pass, across query blocks, key panels and the sliding window;
//   - generate at TP = 1, 2, 3 gives exactly the oracle's greedy tokens and, at every step,
//     bitwise its logits (gathered from the ranks' vocabulary slices);
//   - a decode run allocates nothing once its buffers exist; ranks that disagree, bad prompts
//     and misuse are errors.
// The TP runs sum in rank order (RankOrderSum): a ring adds a value's N contributions in an
// order set by the shard the value falls in, which moves with the call's count (T x d_model),
// so for N >= 3 a T-row prefill and a one-row step round the same sum differently — a property
// of the ring, not of the cache. With two ranks the ring's sum is commutative, hence
// count-independent, and the equarx ring is tested bitwise too.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "generate.h"
#include "model.h"
#include "runner.h"
#include "synthetic_fixture.h"
#include "world.h"

// Counts operator new while g_count_allocs is set (DecodeAllocatesNothing). ASan and TSan bring
// their own operator new, so sanitizer builds leave it alone and do not build that test.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GEMMA3_SANITIZER_NEW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define GEMMA3_SANITIZER_NEW 1
#endif
#endif
namespace {
#ifndef GEMMA3_SANITIZER_NEW
std::atomic<bool> g_count_allocs{false};
std::atomic<size_t> g_allocs{0};
void* CountedNew(size_t n) {
  if (g_count_allocs.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
#endif
}  // namespace
#ifndef GEMMA3_SANITIZER_NEW
void* operator new(size_t n) { return CountedNew(n); }
void* operator new[](size_t n) { return CountedNew(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#endif

namespace gemma3 {
namespace {

using equarx::tools::World;
using Factory = InProcessRunner::ReducerFactory;

// Sums in rank order through the world, in f64 rounded once to f32: a value's result does not
// depend on the count of the call.
Reducer RankOrderSum(World& w) {
  if (w.size() == 1) return [](float*, size_t) { return true; };
  auto tmp = std::make_shared<std::vector<double>>();
  return [&w, tmp](float* buf, size_t n) {
    tmp->assign(buf, buf + n);
    w.SumInPlace(tmp->data(), n);
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>((*tmp)[i]);
    return true;
  };
}

// The equarx unquantized f32 ring over the world's communicator.
Reducer EquarxRing(World& w) {
  ReduceConfig ring;
  ring.options.algorithm = equarx::Algorithm::kRing;
  return MakeReducer(w.size() > 1 ? &w.comm() : nullptr, ring, nullptr);
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SyntheticDecode : public SyntheticModel {
 protected:
  static void SetUpTestSuite() {  // with its own output projection: greedy tokens vary
    testing::SyntheticSpec spec = Spec();
    spec.untied_output = true;
    SetUpWith(spec);
  }
  static std::vector<std::unique_ptr<RankModel>> Shards(int tp) {
    std::vector<std::unique_ptr<RankModel>> m(tp);
    for (int r = 0; r < tp; ++r) {
      m[r] = std::make_unique<RankModel>();
      EXPECT_EQ(m[r]->Load(*file_, *config_, r, tp).ToString(), "ok");
    }
    return m;
  }
  // The oracle: the full-sequence forward pass of `tokens` on the shards, then the full head
  // on the last row. Every rank's hidden states must be bitwise equal.
  static std::vector<float> OracleLogits(const std::vector<std::unique_ptr<RankModel>>& shards,
                                         const Factory& make, const LmHead& head,
                                         const std::vector<int32_t>& tokens) {
    const int tp = static_cast<int>(shards.size());
    const size_t T = tokens.size(), d = config_->d_model;
    std::vector<std::vector<float>> out(tp, std::vector<float>(T * d));
    EXPECT_TRUE(equarx::tools::RunInProcess(tp, [&](World& w) {
      EXPECT_TRUE(shards[w.rank()]->Forward(tokens.data(), T, make(w), 1, out[w.rank()].data(), nullptr));
    }).ok());
    for (int r = 1; r < tp; ++r) EXPECT_TRUE(SameBits(out[r], out[0])) << "oracle rank " << r;
    std::vector<float> logits(head.vocab());
    head.Logits(out[0].data() + (T - 1) * d, 1, logits.data(), 1);
    return logits;
  }
  // Generate at `tp` against the oracle: for k = 1..n, the run of k tokens must end with the
  // oracle's logits of the prompt and the first k - 1 tokens, bitwise, and with its argmax.
  static void CheckAgainstOracle(int tp, const Factory& make, size_t prompt_len, size_t n) {
    SCOPED_TRACE("tp " + std::to_string(tp) + ", prompt " + std::to_string(prompt_len) + ", " +
                 std::to_string(n) + " tokens");
    InProcessRunner gen;
    LmHead full;
    ASSERT_EQ(gen.Load(*file_, *config_, tp).ToString(), "ok");
    ASSERT_EQ(gen.LoadHead().ToString(), "ok");
    ASSERT_EQ(full.Load(*file_, *config_, 1).ToString(), "ok");
    const auto shards = Shards(tp);
    const auto prompt = Tokens(prompt_len);
    ReduceConfig rc;
    GenerateResult all;
    ASSERT_TRUE(gen.Generate(prompt, n, rc, make, &all).ok());
    ASSERT_EQ(all.tokens.size(), n);
    EXPECT_EQ(all.token_s.size(), n - 1);
    EXPECT_EQ(all.prefill_reduce_calls, 2u * config_->n_layers);  // attention out, FFN out
    EXPECT_EQ(all.decode_reduce_calls, 2u * config_->n_layers * (n - 1));
    EXPECT_EQ(all.decode_reduce_values, all.decode_reduce_calls * config_->d_model);  // batch 1
    // The decode work's CPU time, every rank's thread summed: some, and no more than tp
    // threads can use in the decode steps' time.
    const double decode_wall = std::accumulate(all.token_s.begin(), all.token_s.end(), 0.0);
    EXPECT_GT(all.decode_compute_cpu_s, 0.0);
    EXPECT_LE(all.decode_compute_cpu_s, tp * decode_wall);
    std::vector<int32_t> seq = prompt;
    for (size_t k = 1; k <= n; ++k) {
      GenerateResult res;
      const equarx::Status st = gen.Generate(prompt, k, rc, make, &res);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_EQ(res.tokens, std::vector<int32_t>(all.tokens.begin(), all.tokens.begin() + k));
      std::vector<float> got(full.vocab());
      for (int r = 0; r < tp; ++r) {
        const auto& slice = gen.generator(r).logits();
        ASSERT_EQ(slice.size(), gen.head(r).vocab());
        std::copy(slice.begin(), slice.end(), got.begin() + gen.head(r).first());
      }
      const auto want = OracleLogits(shards, make, full, seq);
      EXPECT_TRUE(SameBits(got, want)) << "logits of generated token " << k - 1;
      size_t am = 0;
      for (size_t i = 1; i < want.size(); ++i)
        if (want[i] > want[am]) am = i;
      EXPECT_EQ(static_cast<size_t>(all.tokens[k - 1]), am) << "generated token " << k - 1;
      seq.push_back(all.tokens[k - 1]);
    }
    // Not a degenerate run: the model does not repeat one token throughout.
    EXPECT_GT(std::set<int32_t>(all.tokens.begin(), all.tokens.end()).size(), 1u);
  }
};

TEST_F(SyntheticDecode, StepsInPiecesMatchOneForwardBitwise) {
  RankModel m;
  ASSERT_EQ(m.Load(*file_, *config_, 0, 1).ToString(), "ok");
  const auto tokens = Tokens(70);  // two query blocks of 48, five key panels, window 5
  const size_t d = config_->d_model;
  std::vector<float> whole(tokens.size() * d);
  const Reducer none = [](float*, size_t) { return true; };
  ASSERT_TRUE(m.Forward(tokens.data(), tokens.size(), none, 2, whole.data(), nullptr));
  KvCache cache;
  ASSERT_TRUE(m.InitCache(tokens.size(), &cache));
  Workspace ws;
  size_t pos = 0;
  for (size_t piece : {49, 1, 1, 17, 2}) {
    std::vector<float> out(piece * d);
    ASSERT_TRUE(m.Step(tokens.data() + pos, piece, &cache, &ws, none, 2, out.data(), nullptr));
    EXPECT_EQ(0, std::memcmp(out.data(), whole.data() + pos * d, out.size() * sizeof(float)))
        << "positions " << pos << ".." << pos + piece - 1;
    pos += piece;
  }
  EXPECT_EQ(cache.length, tokens.size());
  std::vector<float> out(d);
  EXPECT_FALSE(m.Step(tokens.data(), 1, &cache, &ws, none, 2, out.data(), nullptr)) << "cache is full";
}

TEST_F(SyntheticDecode, GenerateMatchesRecomputedPrefill) {
  for (int tp : {1, 2, 3}) {
    CheckAgainstOracle(tp, RankOrderSum, 11, 12);  // decode crosses the window and a key panel
    CheckAgainstOracle(tp, RankOrderSum, 50, 4);   // a prefill of two query blocks
  }
}

TEST_F(SyntheticDecode, GenerateWithTheEquarxRingMatchesRecomputedPrefill) {
  CheckAgainstOracle(2, EquarxRing, 11, 12);
}

// Not built under a sanitizer, whose operator new cannot be counted (the release build runs it;
// a skipped test would fail CI's sanitizer stage).
#ifndef GEMMA3_SANITIZER_NEW
TEST_F(SyntheticDecode, DecodeAllocatesNothing) {
  RankModel m;
  LmHead head;
  ASSERT_EQ(m.Load(*file_, *config_, 0, 1).ToString(), "ok");
  ASSERT_EQ(head.Load(*file_, *config_, 1).ToString(), "ok");
  const Reducer none = [](float*, size_t) { return true; };
  const Exchange single = [](double*, size_t) { return true; };
  const auto prompt = Tokens(20);
  for (int threads : {1, 2}) {  // with 2, the GEMMs' helper thread is woken, not started
    RankGenerator gen(m, head, threads);
    GenerateResult res;
    ASSERT_TRUE(gen.Run(prompt, 10, none, single, &res).ok());
    const auto first = res.tokens;
    g_allocs = 0;
    g_count_allocs = true;
    const equarx::Status st = gen.Run(prompt, 10, none, single, &res);  // the same shape again
    g_count_allocs = false;
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(g_allocs.load(), 0u) << "allocations in a prefill and 9 decode steps on " << threads << " threads";
    EXPECT_EQ(res.tokens, first);
  }
}
#endif

TEST_F(SyntheticDecode, RanksThatDisagreeFail) {
  InProcessRunner gen;
  ASSERT_EQ(gen.Load(*file_, *config_, 2).ToString(), "ok");
  ASSERT_EQ(gen.LoadHead().ToString(), "ok");
  // Rank 1's sums are off by one ulp in one value: its hidden state differs from rank 0's.
  const Factory skewed = [](World& w) -> Reducer {
    Reducer sum = RankOrderSum(w);
    const int rank = w.rank();
    return [sum, rank](float* buf, size_t n) {
      if (!sum(buf, n)) return false;
      if (rank == 1) buf[0] = std::nextafter(buf[0], INFINITY);
      return true;
    };
  };
  GenerateResult res;
  const equarx::Status st = gen.Generate(Tokens(5), 3, ReduceConfig{}, skewed, &res);
  EXPECT_EQ(st.code(), equarx::StatusCode::kMismatch) << st.ToString();
  EXPECT_NE(st.message().find("ranks disagree after position"), std::string::npos) << st.message();
}

TEST_F(SyntheticDecode, BadRequestsAreErrors) {
  InProcessRunner gen;
  ASSERT_EQ(gen.Load(*file_, *config_, 2).ToString(), "ok");
  GenerateResult res;
  EXPECT_EQ(gen.Generate(Tokens(3), 2, ReduceConfig{}, false, &res).code(), equarx::StatusCode::kInternal)
      << "Generate before LoadHead";
  ASSERT_EQ(gen.LoadHead().ToString(), "ok");
  using equarx::StatusCode;
  EXPECT_EQ(gen.Generate({}, 2, ReduceConfig{}, false, &res).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gen.Generate(Tokens(3), 0, ReduceConfig{}, false, &res).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gen.Generate({2, config_->vocab}, 2, ReduceConfig{}, false, &res).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gen.Generate({2, -1}, 2, ReduceConfig{}, false, &res).code(), StatusCode::kInvalidArgument);
  ReduceConfig mpi;
  mpi.mpi_allreduce = true;
  EXPECT_EQ(gen.Generate(Tokens(3), 2, mpi, false, &res).code(), StatusCode::kInvalidArgument) << "needs mpirun";
  // After refusals the group still generates.
  ReduceConfig ring;
  ring.options.algorithm = equarx::Algorithm::kRing;
  EXPECT_TRUE(gen.Generate(Tokens(3), 4, ring, false, &res).ok());
  EXPECT_EQ(res.tokens.size(), 4u);
  GenerateResult warm;  // a warm-up first changes nothing in the result
  EXPECT_TRUE(gen.Generate(Tokens(3), 4, ring, true, &warm).ok());
  EXPECT_EQ(warm.tokens, res.tokens);
  EXPECT_EQ(warm.token_s.size(), 3u);
}

TEST(Percentile, NearestRank) {
  EXPECT_EQ(Percentile({}, 99), 0);
  EXPECT_EQ(Percentile({3, 1, 2}, 50), 2);
  EXPECT_EQ(Percentile({3, 1, 2}, 99), 3);
  std::vector<double> v(100);
  for (int i = 0; i < 100; ++i) v[i] = 100 - i;  // 1..100
  EXPECT_EQ(Percentile(v, 99), 99);
  EXPECT_EQ(Percentile(v, 100), 100);
}

}  // namespace
}  // namespace gemma3
