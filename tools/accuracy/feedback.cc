// equarx-accuracy, section 5 — error feedback: K calls on the same inputs, the MSE of one
// call and of the mean of the K results against the exact sum, with and without feedback.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "accuracy.h"
#include "experiment.h"
#include "half.h"

namespace equarx::tools {

bool FeedbackSection(const Settings& s, Report* rep, std::vector<std::string>* errors) {
  bool all_ok = true;
  const uint64_t K = s.feedback_calls;
  std::unique_ptr<Bf16Experiment> e;
  GenSpec g;
  g.seed = s.seed + 300;
  g.cols = s.cols;
  if (Status st = Bf16Experiment::Create(int(s.ranks), s.sweep_size, g, &e); !st.ok()) { errors->push_back(st.ToString()); return false; }
  const size_t n = e->count();
  // The exact f64 sum of the bf16 inputs (section 5 compares against it, not its bf16 rounding).
  std::vector<double> exact(n, 0.0);
  for (int r = 0; r < e->ranks(); ++r)
    for (size_t i = 0; i < n; ++i) exact[i] += double(BF16ToF32(e->input(r)[i]));
  rep->Line("## 5. Error feedback: " + std::to_string(K) + " calls on the same " + std::to_string(s.ranks) +
             " ranks x " + std::to_string(n) + " bf16 N(0,1) values, block " + std::to_string(s.block));
  rep->Line();
  rep->Line("Each row makes " + std::to_string(K) + " AllReduce calls with the same inputs. With feedback, "
             "each rank passes its residual (`AllReduceExtras::residual`, zeros at first) from one call to "
             "the next. `one call` = MSE of the first result, `mean of K` = MSE of the mean of the K results; "
             "both against the exact f64 sum (not its bf16 rounding). Nearest rounding without feedback "
             "repeats the same error; stochastic rounding averages it down like 1/K; feedback carries "
             "what each call lost into the next, so the mean converges like 1/K^2.");
  rep->Line();
  rep->Line("| codec | configuration | rounding | feedback | MSE one call | MSE mean of K | one / mean |");
  rep->Line("|---|---|---|:---:|---:|---:|---:|");
  for (Codec codec : s.codec_list) {
    if (!SupportsStochasticRounding(codec)) continue;  // the integer codecs
    for (Algorithm a : {Algorithm::kFull, Algorithm::kTwoShot})
      for (Rounding rounding : {Rounding::kNearest, Rounding::kStochastic})
        for (bool fb : {false, true}) {
          Config c{a, Phases::kRSAG};
          c.codec = codec;
          c.rounding = rounding;
          std::vector<std::vector<float>> residual(size_t(e->ranks()), std::vector<float>(fb ? n : 0, 0.0f));
          std::vector<AllReduceExtras> extras(size_t(e->ranks()));
          if (fb)
            for (size_t r = 0; r < extras.size(); ++r) extras[r].residual = residual[r].data();
          std::vector<double> mean(n, 0.0);
          double one = 0;
          bool ok = true;
          for (uint64_t k = 0; k < K && ok; ++k) {
            AllReduceOptions o = OptionsFor(s, c, s.block);
            o.seed = s.seed + k;  // a new seed per call, as a training loop would pass its step
            RunResult res;
            Status st = e->Run(o, &res, false, &extras);
            if (!st.ok() || res.first_bad_rank >= 0) {
              ok = false;
              errors->push_back(c.label() + " feedback: " + (st.ok() ? "ranks disagree" : st.ToString()));
              break;
            }
            const uint16_t* got = e->result(0);
            double sq = 0;
            for (size_t i = 0; i < n; ++i) {
              const double v = BF16ToF32(got[i]);
              mean[i] += v / double(K);
              if (k == 0) sq += (v - exact[i]) * (v - exact[i]);
            }
            if (k == 0) one = sq / double(n);
          }
          if (!ok) {
            all_ok = false;
            continue;
          }
          double msq = 0;
          for (size_t i = 0; i < n; ++i) msq += (mean[i] - exact[i]) * (mean[i] - exact[i]);
          msq /= double(n);
          std::fprintf(stderr, "  [feedback] %s %s %s: one %.3e mean %.3e\n", c.base_label().c_str(),
                       std::string(RoundingName(rounding)).c_str(), fb ? "on" : "off", one, msq);
          rep->Line("| " + std::string(CodecName(codec)) + " | " + c.base_label() + " | " +
                     std::string(RoundingName(rounding)) + " | " + (fb ? "yes" : "no") + " | " + Sci(one) +
                     " | " + Sci(msq) + " | " + Fmt("%.1fx", msq > 0 ? one / msq : 0.0) + " |");
        }
  }
  rep->Line();
  return all_ok;
}

}  // namespace equarx::tools
