// test_forward.cc — the GEMM kernel against a naive loop, and the forward pass on a synthetic
// model: TP-N with the unquantized f32 ring matches TP-1 within float tolerance for several N
// (including N > heads, where some ranks hold no heads), quantized EQuARX runs stay close and
// keep every rank bitwise identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemm.h"
#include "gguf.h"
#include "model.h"
#include "runner.h"
#include "synthetic_fixture.h"

namespace gemma3 {
namespace {

std::vector<float> Normal(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> g;
  std::vector<float> v(n);
  for (auto& e : v) e = g(rng);
  return v;
}

TEST(Gemm, MatchesNaiveOnRaggedShapes) {
  std::mt19937 rng(7);
  for (auto [rows, n, k] : {std::tuple<size_t, size_t, size_t>{1, 1, 1}, {7, 17, 300}, {13, 48, 256},
                            {6, 16, 513}, {25, 33, 5}}) {
    const std::vector<float> x = Normal(rng, rows * k), w = Normal(rng, n * k), y(rows * n, 1.f);
    PackedMatrix pw;
    PackRows(w.data(), n, k, k, &pw);
    for (int acc = 0; acc < 2; ++acc) {
      std::vector<float> out = y;
      Gemm(x.data(), rows, k, pw, out.data(), n, 2, acc);
      for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < n; ++j) {
          double ref = acc ? 1.0 : 0.0, mag = acc ? 1.0 : 0.0;
          for (size_t kk = 0; kk < k; ++kk) {
            ref += static_cast<double>(x[r * k + kk]) * w[j * k + kk];
            mag += std::fabs(static_cast<double>(x[r * k + kk]) * w[j * k + kk]);
          }
          // The f32 bound of a dot product (Higham, Accuracy and Stability, 3.1): k rounded
          // products summed in any order with the accumulated value, gamma_{k+1} sum |x w|,
          // gamma_m = m u / (1 - m u), u = 2^-24.
          const double mu = static_cast<double>(k + 1) * 0x1p-24;
          ASSERT_NEAR(out[r * n + j], ref, mu / (1 - mu) * mag)
              << rows << "x" << n << "x" << k << " at " << r << "," << j;
        }
    }
    // PackCols of the transpose gives the same matrix.
    std::vector<float> wt(k * n);
    for (size_t j = 0; j < n; ++j)
      for (size_t kk = 0; kk < k; ++kk) wt[kk * n + j] = w[j * k + kk];
    PackedMatrix pc;
    PackCols(wt.data(), k, n, n, &pc);
    std::vector<float> a(rows * n), b(rows * n);
    Gemm(x.data(), rows, k, pw, a.data(), n, 1);
    Gemm(x.data(), rows, k, pc, b.data(), n, 1);
    EXPECT_EQ(a, b);
  }
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// A row's result does not depend on how many rows the call has (decode runs one row where
// prefill ran many): bitwise, on every kernel, with partial panels, K chunks and accumulation.
TEST(Gemm, RowCountDoesNotChangeBits) {
  std::mt19937 rng(11);
  const size_t n = 37, k = 600, rows = 13;
  const std::vector<float> x = Normal(rng, rows * k), w = Normal(rng, n * k), y0 = Normal(rng, rows * n);
  PackedMatrix pw;
  PackRows(w.data(), n, k, k, &pw);
  for (int acc = 0; acc < 2; ++acc) {
    std::vector<float> all = y0;
    Gemm(x.data(), rows, k, pw, all.data(), n, 1, acc);
    for (size_t r0 = 0; r0 < rows; r0 += 4)
      for (size_t nr = 1; nr <= 5 && r0 + nr <= rows; ++nr) {
        std::vector<float> part(y0.begin() + r0 * n, y0.begin() + (r0 + nr) * n);
        Gemm(x.data() + r0 * k, nr, k, pw, part.data(), n, 2, acc);
        EXPECT_EQ(0, std::memcmp(part.data(), all.data() + r0 * n, part.size() * sizeof(float)))
            << nr << " rows from row " << r0 << (acc ? ", accumulating" : "");
      }
  }
}

TEST_F(SyntheticModel, ConfigFromMetadata) {
  EXPECT_EQ(config_->d_model, 128);
  EXPECT_EQ(config_->n_layers, 4);
  EXPECT_EQ(config_->head_dim, 64);
  EXPECT_FALSE(config_->IsGlobal(0));
  EXPECT_TRUE(config_->IsGlobal(2));
  EXPECT_FLOAT_EQ(config_->attn_scale, 0.125f);
  EXPECT_EQ(config_->rope_base_local, 10000.f);
}

TEST_F(SyntheticModel, ShardsCoverEverything) {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    int heads = 0, ff = 0;
    for (int r = 0; r < n; ++r) {
      Shard s = Shard::Make(*config_, r, n);
      heads += s.head_end - s.head_begin;
      ff += s.ff_end - s.ff_begin;
      if (s.head_end > s.head_begin) {
        EXPECT_LE(s.kv_begin, s.head_begin / 2);
        EXPECT_GE(s.kv_end * 2, s.head_end);
      }
    }
    EXPECT_EQ(heads, config_->n_heads) << n;
    EXPECT_EQ(ff, config_->d_ff) << n;
  }
}

// Tolerances: 3x the errors docs/gemma3.md ("Correctness") gives for the synthetic model. TP-N
// over the unquantized f32 ring vs TP-1 (N = 2, 3, 4, 8): max |difference| at most 4e-7 of max
// |hidden| (summation order only). Quantized full/full_bidir/semi (int8, rs+ag) at TP-4: RMS
// error at most 4e-3 of the hidden states' RMS.
constexpr double kSyntheticRingTolerance = 3 * 4e-7;
constexpr double kSyntheticQuantizedTolerance = 3 * 4e-3;

TEST_F(SyntheticModel, TensorParallelRingMatchesSingleRank) {
  auto tokens = Tokens(23);
  const auto ref = SingleRank(tokens);
  RunStats st;
  ReduceConfig ring;
  ring.options.algorithm = equarx::Algorithm::kRing;
  double scale = 0;
  for (float v : ref) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  ASSERT_GT(scale, 0.1);
  ASSERT_TRUE(std::isfinite(scale));
  for (int tp : {2, 3, 4, 8}) {
    auto h = Run(tp, ring, tokens, &st);
    EXPECT_TRUE(st.ranks_agree) << tp;
    const double m = MaxAbsDiff(h, ref);
    EXPECT_LT(m, kSyntheticRingTolerance * scale) << "tp " << tp;
    std::printf("[ tp-%d ring ] max |hidden - tp1| = %.2e of max |hidden| %.2f\n", tp, m / scale, scale);
  }
}

TEST_F(SyntheticModel, QuantizedRunsStayCloseAndRanksAgree) {
  auto tokens = Tokens(40);
  const auto ref = SingleRank(tokens);
  RunStats st;
  ReduceConfig rc;
  double rms = 0;
  for (float v : ref) rms += static_cast<double>(v) * v;
  rms = std::sqrt(rms / ref.size());
  for (auto algo : {equarx::Algorithm::kFull, equarx::Algorithm::kFullBidir, equarx::Algorithm::kSemi}) {
    rc.options.algorithm = algo;
    rc.options.phases = equarx::Phases::kRSAG;
    auto h = Run(4, rc, tokens, &st);
    EXPECT_TRUE(st.ranks_agree);
    double err = 0;
    for (size_t i = 0; i < h.size(); ++i) err += (h[i] - ref[i]) * (h[i] - ref[i]);
    err = std::sqrt(err / h.size());
    EXPECT_LT(err, kSyntheticQuantizedTolerance * rms) << equarx::AlgorithmName(algo);
    std::printf("[ %s ] rms |hidden - tp1| = %.2e of rms |hidden|\n", std::string(equarx::AlgorithmName(algo)).c_str(),
                err / rms);
    EXPECT_GT(err, 0.0) << "quantization should change something";
  }
}

TEST_F(SyntheticModel, LmHeadIsTiedEmbedding) {
  LmHead head;
  ASSERT_EQ(head.Load(*file_, *config_, 2).ToString(), "ok");
  EXPECT_EQ(head.vocab(), static_cast<size_t>(config_->vocab));
  auto tokens = Tokens(5);
  RunStats st;
  auto h = Run(2, ReduceConfig{}, tokens, &st);
  std::vector<float> logits(5 * head.vocab());
  head.Logits(h.data(), 5, logits.data(), 2);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace gemma3
