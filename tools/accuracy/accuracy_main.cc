// equarx-accuracy — the numerical acceptance check of the quantized AllReduce.
//
// Section 1 reproduces the paper's Table I: `--ranks` (8) ranks, each a tensor of `--size`
// (4096x4096) N(0,1) values (seeded, different per rank) rounded to bf16, int8 codec; MSE of
// the bf16 result against bf16(exact f64 sum of the bf16 inputs) for every algorithm x
// phases (full, full_bidir, semi x rs, ag, rs+ag) plus naive_fp8 and the unquantized ring,
// at blocks 64, 128 (and 32, 256 as extra rows). Rows with a paper anchor show the ratio to
// it and PASS/FAIL for +-20%:
//   full / full_bidir rs+ag 0.0014   semi rs+ag 0.001   naive_fp8 0.13
//   two_shot rs+ag: MSE <= 0.0008 (a target beyond the paper, not an anchor)
//   full / full_bidir ag 0.0003, checked with f32 partials in the unquantized RS (an RS that
//   adds no rounding, as the paper's figure implies); the bf16-partials rows show their gap.
// Section 2 repeats the main configurations on other distributions (uniform, heavy-tailed
// with outlier channels, integer-valued), section 3 over world sizes 2..16, on smaller
// tensors (`--sweep-size`, 1M elements). Every row also reports relative RMS, max |error|
// and wire bytes per rank against the bf16 ring.
// Section 4 runs every codec (`--codec`: int8, int4, fp8_e4m3, fp8_e5m2) x rounding
// (`--rounding`: nearest, stochastic with seed `--seed`) x algorithm (`--algo`) x phases
// (`--phases`) in the Table I setting, with each rank's encode telemetry. Section 5 measures
// error feedback: `--feedback-calls` K repeated calls on the same inputs, the MSE of one call
// and of the mean of the K results against the exact sum, with and without feedback.
// Exit status: 0 if every anchor row at the default block (`--block`, 64) is within +-20%
// and every rank agreed bitwise; 1 otherwise (or on a runtime error); 2 on usage errors.
// `--out FILE.md` writes the markdown report (docs/accuracy.md is generated this way).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "equarx/communicator.h"
#include "equarx/options.h"
#include "equarx/types.h"
#include "experiment.h"
#include "half.h"
#include "random.h"

namespace equarx::tools {
namespace {

struct Config {
  Algorithm algo;
  Phases phases;
  bool f32_partials = false;  // the unquantized RS of phases=ag carries f32, not bf16
  Codec codec = Codec::kInt8;
  Rounding rounding = Rounding::kNearest;
  // "algo phases [f32-partials]"
  std::string base_label() const {
    if (algo == Algorithm::kRing || algo == Algorithm::kNaiveFp8) return std::string(AlgorithmName(algo));
    return std::string(AlgorithmName(algo)) + " " + std::string(PhasesName(phases)) +
           (f32_partials ? " f32-partials" : "");
  }
  // The base label, plus the codec and rounding where they are not int8 / nearest.
  std::string label() const {
    std::string l = base_label();
    if (codec != Codec::kInt8) l += " " + std::string(CodecName(codec));
    if (rounding != Rounding::kNearest) l += " " + std::string(RoundingName(rounding));
    return l;
  }
};

std::optional<double> AnchorOf(const Config& c) {
  if (c.codec != Codec::kInt8 || c.rounding != Rounding::kNearest) return std::nullopt;
  if (c.algo == Algorithm::kNaiveFp8) return 0.13;
  const bool full = c.algo == Algorithm::kFull || c.algo == Algorithm::kFullBidir;
  if (full && c.phases == Phases::kRSAG) return 0.0014;
  if (c.algo == Algorithm::kSemi && c.phases == Phases::kRSAG) return 0.001;
  // Not a paper figure: the target for two-shot, MSE <= 0.0008 (checked separately).
  if (full && c.phases == Phases::kAG) return 0.0003;
  return std::nullopt;
}

constexpr double kTwoShotTarget = 0.0008;  // issue target: about half of full's 0.0014

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string Sci(double v) { return Fmt("%.3e", v); }

struct Settings {
  // Section 4 and 5: the lists, as given.
  std::string algos = "full,full_bidir,semi,two_shot";
  std::string phases = "rs+ag";
  std::string codecs = "int8,int4,fp8_e4m3,fp8_e5m2";
  std::string roundings = "nearest,stochastic";
  uint64_t feedback_calls = 16;
  std::vector<Algorithm> algo_list;
  std::vector<Phases> phases_list;
  std::vector<Codec> codec_list;
  std::vector<Rounding> rounding_list;
  uint64_t ranks = 8;
  size_t size = size_t(4096) * 4096;
  size_t cols = 4096;
  uint64_t seed = 1;
  size_t block = kDefaultBlock;
  size_t sweep_size = size_t(1) << 20;
  uint64_t max_ranks = 16;
  bool quick = false;
  std::string sections = "table1,dist,ranks,formats,feedback";
  std::string out;
  uint64_t timeout_ms = 0;
};

class Report {
 public:
  void Line(const std::string& s = "") {
    text_ += s + "\n";
    std::fputs((s + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class Runner {
 public:
  Runner(const Settings& s, Report* rep) : s_(s), rep_(rep) {}

  bool ok() const { return ok_; }
  size_t anchor_pass() const { return anchor_pass_; }
  size_t anchor_total() const { return anchor_total_; }

  AllReduceOptions Options(const Config& c, size_t block) const {
    AllReduceOptions o;
    o.algorithm = c.algo;
    o.phases = c.phases;
    o.codec = c.codec;
    o.rounding = c.rounding;
    o.seed = s_.seed;
    o.block = block;
    o.timeout_ms = uint32_t(s_.timeout_ms);
    o.f32_partials = c.f32_partials;
    return o;
  }

  // Runs one configuration; records failures. Returns false if the call failed.
  bool RunOne(Bf16Experiment& e, const Config& c, size_t block, RunResult* r,
              const std::vector<AllReduceExtras>* extras = nullptr) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = e.Run(Options(c, block), r, true, extras);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "  [%d ranks x %zu] %-18s block %4zu: %s (%.2f s)\n", e.ranks(), e.count(),
                 c.label().c_str(), block, st.ok() ? Sci(r->err.mse).c_str() : st.ToString().c_str(), sec);
    if (!st.ok()) {
      ok_ = false;
      errors_.push_back(c.label() + " block " + std::to_string(block) + ": " + st.ToString());
      return false;
    }
    if (r->first_bad_rank >= 0) {
      ok_ = false;
      errors_.push_back(c.label() + " block " + std::to_string(block) + ": rank " +
                        std::to_string(r->first_bad_rank) + " differs bitwise from rank 0");
    }
    return true;
  }

  const std::vector<std::string>& errors() const { return errors_; }

  void TableI() {
    const size_t n = s_.size;
    rep_->Line("## 1. Table I setting: " + std::to_string(s_.ranks) + " ranks x " + std::to_string(n) +
               " bf16 N(0,1) values, int8");
    rep_->Line();
    rep_->Line("MSE of the bf16 result against bf16(exact f64 sum of the bf16 inputs). Anchors are the "
               "paper's Table I; PASS = within +-20%. `wire/rank` = bytes one rank sent (mean over ranks); "
               "`ring/this` = bf16 ring wire bytes divided by this row's.");
    rep_->Line();
    Bf16Experiment* e = TableIExperiment();
    if (!e) return;
    rep_->Line("| block | configuration | MSE | anchor | ratio | +-20% | rel RMS | max abs | wire/rank | ring/this | ranks agree |");
    rep_->Line("|---:|---|---:|---:|---:|:---:|---:|---:|---:|---:|:---:|");
    RunResult ring;
    if (!RunOne(*e, {Algorithm::kRing, Phases::kRSAG}, s_.block, &ring)) return;
    const double ring_bytes = ring.call.mean_bytes_per_rank();
    table1_ring_bytes_ = ring_bytes;
    Row("-", {Algorithm::kRing, Phases::kRSAG}, ring, ring_bytes, false);
    RunResult naive;
    if (RunOne(*e, {Algorithm::kNaiveFp8, Phases::kRSAG}, s_.block, &naive))
      Row("-", {Algorithm::kNaiveFp8, Phases::kRSAG}, naive, ring_bytes, true);
    std::vector<size_t> blocks = {s_.block};
    for (size_t b : s_.quick ? std::vector<size_t>{64, 128} : std::vector<size_t>{64, 128, 32, 256})
      if (b != s_.block) blocks.push_back(b);
    for (size_t b : blocks) {
      for (Algorithm a : {Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi, Algorithm::kTwoShot}) {
        for (Config c : std::vector<Config>{{a, Phases::kRS}, {a, Phases::kAG}, {a, Phases::kAG, true},
                                            {a, Phases::kRSAG}}) {
          RunResult r;
          if (RunOne(*e, c, b, &r)) Row(std::to_string(b), c, r, ring_bytes, b == s_.block);
        }
      }
    }
    rep_->Line();
    rep_->Line("Anchor rows at the default block " + std::to_string(s_.block) + ": " +
               std::to_string(anchor_pass_) + " of " + std::to_string(anchor_total_) + " within +-20%.");
    rep_->Line();
    rep_->Line("The paper's AG-only anchor is checked on the `ag f32-partials` rows: an unquantized "
               "reduce-scatter that adds no rounding of its own, as in an exact simulation of the "
               "schedule (0.00032 at block 64). With bf16 partial sums on the wire (`ag` rows, the "
               "configuration with the paper's byte count) every RS hop also rounds the running sum to "
               "bf16, which adds about the `ring` row's MSE; those rows are reported with their ratio "
               "to the anchor and marked `gap`, not counted in the verdict.");
    rep_->Line();
  }

  // Section 4: every codec x rounding x algorithm x phases of the lists, Table I setting.
  void Formats() {
    Bf16Experiment* e = TableIExperiment();
    if (!e) return;
    rep_->Line("## 4. Codecs and rounding: " + std::to_string(s_.ranks) + " ranks x " +
               std::to_string(s_.size) + " bf16 N(0,1) values, block " + std::to_string(s_.block));
    rep_->Line();
    rep_->Line("The Table I setting for every wire codec; `stochastic` rounding uses seed " +
               std::to_string(s_.seed) + " (int8 and int4 only). MSE against bf16(exact sum) as in "
               "section 1. Telemetry (opt-in per call, `AllReduceExtras::stats`): `est. rel RMS` is "
               "rank 0's estimate of the relative RMS error of its own encodes (from the block scales, "
               "no reference needed), `clipped` the values whose scaled magnitude came out above the code range "
               "before clamping, summed over ranks (with absmax scales only a block's largest element, by an "
               "f32 rounding ulp: not a real clip).");
    rep_->Line();
    rep_->Line("| codec | rounding | configuration | MSE | rel RMS | max abs | wire/rank | ring/this | "
               "est. rel RMS per encode | clipped | ranks agree |");
    rep_->Line("|---|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|");
    if (table1_ring_bytes_ == 0) {
      RunResult ring;
      if (!RunOne(*e, {Algorithm::kRing, Phases::kRSAG}, s_.block, &ring)) return;
      table1_ring_bytes_ = ring.call.mean_bytes_per_rank();
    }
    for (Codec codec : s_.codec_list)
      for (Rounding rounding : s_.rounding_list) {
        if (rounding == Rounding::kStochastic && !SupportsStochasticRounding(codec)) continue;
        for (Algorithm a : s_.algo_list)
          for (Phases ph : s_.phases_list) {
            Config c{a, ph};
            c.codec = codec;
            c.rounding = rounding;
            std::vector<AllReduceStats> stats(size_t(e->ranks()));
            std::vector<AllReduceExtras> extras(size_t(e->ranks()));
            for (size_t r = 0; r < extras.size(); ++r) extras[r].stats = &stats[r];
            RunResult res;
            if (!RunOne(*e, c, s_.block, &res, &extras)) continue;
            uint64_t clipped = 0;
            for (const AllReduceStats& st : stats) clipped += st.clipped;
            rep_->Line("| " + std::string(CodecName(codec)) + " | " + std::string(RoundingName(rounding)) +
                       " | " + c.base_label() + " | " + Sci(res.err.mse) + " | " + Sci(res.err.rel_rms) + " | " +
                       Sci(res.err.max_abs) + " | " + Fmt("%.0f", res.call.mean_bytes_per_rank()) + " | " +
                       Ratio(table1_ring_bytes_, res.call.mean_bytes_per_rank()) + " | " +
                       Sci(stats[0].rel_rms_err_est) + " | " + std::to_string(clipped) + " | " +
                       (res.first_bad_rank < 0 ? "yes" : "NO") + " |");
          }
      }
    rep_->Line();
  }

  // Section 5: error feedback over K repeated calls on the same inputs.
  void Feedback() {
    const uint64_t K = s_.feedback_calls;
    std::unique_ptr<Bf16Experiment> e;
    GenSpec g;
    g.seed = s_.seed + 300;
    g.cols = s_.cols;
    if (Status st = Bf16Experiment::Create(int(s_.ranks), s_.sweep_size, g, &e); !st.ok()) return Fatal(st);
    const size_t n = e->count();
    // The exact f64 sum of the bf16 inputs (section 5 compares against it, not its bf16 rounding).
    std::vector<double> exact(n, 0.0);
    for (int r = 0; r < e->ranks(); ++r)
      for (size_t i = 0; i < n; ++i) exact[i] += double(BF16ToF32(e->input(r)[i]));
    rep_->Line("## 5. Error feedback: " + std::to_string(K) + " calls on the same " + std::to_string(s_.ranks) +
               " ranks x " + std::to_string(n) + " bf16 N(0,1) values, block " + std::to_string(s_.block));
    rep_->Line();
    rep_->Line("Each row makes " + std::to_string(K) + " AllReduce calls with the same inputs. With feedback, "
               "each rank passes its residual (`AllReduceExtras::residual`, zeros at first) from one call to "
               "the next. `one call` = MSE of the first result, `mean of K` = MSE of the mean of the K results; "
               "both against the exact f64 sum (not its bf16 rounding). Nearest rounding without feedback "
               "repeats the same error; stochastic rounding averages it down like 1/K; feedback carries "
               "what each call lost into the next, so the mean converges like 1/K^2.");
    rep_->Line();
    rep_->Line("| codec | configuration | rounding | feedback | MSE one call | MSE mean of K | one / mean |");
    rep_->Line("|---|---|---|:---:|---:|---:|---:|");
    for (Codec codec : s_.codec_list) {
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
              AllReduceOptions o = Options(c, s_.block);
              o.seed = s_.seed + k;  // a new seed per call, as a training loop would pass its step
              RunResult res;
              Status st = e->Run(o, &res, false, &extras);
              if (!st.ok() || res.first_bad_rank >= 0) {
                ok = false;
                errors_.push_back(c.label() + " feedback: " + (st.ok() ? "ranks disagree" : st.ToString()));
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
              ok_ = false;
              continue;
            }
            double msq = 0;
            for (size_t i = 0; i < n; ++i) msq += (mean[i] - exact[i]) * (mean[i] - exact[i]);
            msq /= double(n);
            std::fprintf(stderr, "  [feedback] %s %s %s: one %.3e mean %.3e\n", c.base_label().c_str(),
                         std::string(RoundingName(rounding)).c_str(), fb ? "on" : "off", one, msq);
            rep_->Line("| " + std::string(CodecName(codec)) + " | " + c.base_label() + " | " +
                       std::string(RoundingName(rounding)) + " | " + (fb ? "yes" : "no") + " | " + Sci(one) +
                       " | " + Sci(msq) + " | " + Fmt("%.1fx", msq > 0 ? one / msq : 0.0) + " |");
          }
    }
    rep_->Line();
  }

  void Distributions() {
    rep_->Line("## 2. Other distributions: " + std::to_string(s_.ranks) + " ranks x " +
               std::to_string(s_.sweep_size) + " bf16 values, int8, block " + std::to_string(s_.block));
    rep_->Line();
    rep_->Line("`heavy` = N(0,1) with 0.5% outlier channels (columns of a " + std::to_string(s_.cols) +
               "-wide row, the same on every rank) scaled x50..x100, plus spikes of magnitude 100..1000 "
               "at 1e-4 of the elements. `integer` = integers uniform in [-8, 8] (the unquantized ring "
               "must be exact: #wrong 0). Reference: bf16(exact sum).");
    rep_->Line();
    rep_->Line("| distribution | configuration | MSE | rel RMS | max abs | #wrong | wire/rank | ring/this | ranks agree |");
    rep_->Line("|---|---|---:|---:|---:|---:|---:|---:|:---:|");
    for (Distribution d : {Distribution::kNormal, Distribution::kUniform, Distribution::kHeavyTailed,
                           Distribution::kInteger}) {
      std::unique_ptr<Bf16Experiment> e;
      GenSpec g;
      g.dist = d;
      g.seed = s_.seed + 100;
      g.cols = s_.cols;
      if (Status st = Bf16Experiment::Create(int(s_.ranks), s_.sweep_size, g, &e); !st.ok()) return Fatal(st);
      double ring_bytes = 0;
      for (const Config& c : SweepConfigs()) {
        RunResult r;
        if (!RunOne(*e, c, s_.block, &r)) continue;
        if (c.algo == Algorithm::kRing) ring_bytes = r.call.mean_bytes_per_rank();
        rep_->Line("| " + std::string(DistributionName(d)) + " | " + c.label() + " | " + Sci(r.err.mse) +
                   " | " + Sci(r.err.rel_rms) + " | " + Sci(r.err.max_abs) + " | " +
                   std::to_string(r.err.wrong) + " | " + Fmt("%.0f", r.call.mean_bytes_per_rank()) + " | " +
                   Ratio(ring_bytes, r.call.mean_bytes_per_rank()) + " | " +
                   (r.first_bad_rank < 0 ? "yes" : "NO") + " |");
      }
    }
    rep_->Line();
  }

  void WorldSizes() {
    std::vector<uint64_t> ns;
    if (s_.quick) ns = {2, 3, 5, 8, 16};
    else
      for (uint64_t n = 2; n <= s_.max_ranks; ++n) ns.push_back(n);
    const std::vector<Config> configs = SweepConfigs();
    struct Cell { ErrorStats err; double bytes = 0; bool ok = false; };
    std::vector<std::vector<Cell>> cells(ns.size(), std::vector<Cell>(configs.size()));
    for (size_t i = 0; i < ns.size(); ++i) {
      if (ns[i] > s_.max_ranks) continue;
      std::unique_ptr<Bf16Experiment> e;
      GenSpec g;
      g.seed = s_.seed + 200 + ns[i];
      g.cols = s_.cols;
      if (Status st = Bf16Experiment::Create(int(ns[i]), s_.sweep_size, g, &e); !st.ok()) return Fatal(st);
      for (size_t j = 0; j < configs.size(); ++j) {
        RunResult r;
        if (!RunOne(*e, configs[j], s_.block, &r)) continue;
        cells[i][j] = {r.err, r.call.mean_bytes_per_rank(), true};
      }
    }
    rep_->Line("## 3. World sizes: N ranks x " + std::to_string(s_.sweep_size) +
               " bf16 N(0,1) values, int8, block " + std::to_string(s_.block));
    rep_->Line();
    std::string head = "| N |", rule = "|---:|";
    for (const Config& c : configs) { head += " " + c.label() + " |"; rule += "---:|"; }
    const char* titles[] = {"MSE", "relative RMS", "max abs error", "wire bytes per rank (ring/this)"};
    for (int m = 0; m < 4; ++m) {
      rep_->Line(std::string("**") + titles[m] + "**");
      rep_->Line();
      rep_->Line(head);
      rep_->Line(rule);
      for (size_t i = 0; i < ns.size(); ++i) {
        if (ns[i] > s_.max_ranks) continue;
        std::string row = "| " + std::to_string(ns[i]) + " |";
        for (size_t j = 0; j < configs.size(); ++j) {
          const Cell& c = cells[i][j];
          std::string v = "error";
          if (c.ok) {
            if (m == 0) v = Sci(c.err.mse);
            else if (m == 1) v = Sci(c.err.rel_rms);
            else if (m == 2) v = Sci(c.err.max_abs);
            else v = Fmt("%.0f", c.bytes) + " (" + Ratio(cells[i][0].bytes, c.bytes) + ")";
          }
          row += " " + v + " |";
        }
        rep_->Line(row);
      }
      rep_->Line();
    }
  }

 private:
  static std::vector<Config> SweepConfigs() {
    return {{Algorithm::kRing, Phases::kRSAG},      {Algorithm::kFull, Phases::kRSAG},
            {Algorithm::kFullBidir, Phases::kRSAG}, {Algorithm::kSemi, Phases::kRSAG},
            {Algorithm::kTwoShot, Phases::kRSAG},   {Algorithm::kFullBidir, Phases::kAG},
            {Algorithm::kNaiveFp8, Phases::kRSAG}};
  }
  static std::string Ratio(double base, double v) { return v > 0 && base > 0 ? Fmt("%.2fx", base / v) : "-"; }

  void Row(const std::string& block, const Config& c, const RunResult& r, double ring_bytes, bool check) {
    const std::optional<double> anchor = AnchorOf(c);
    if (check || block == "-") default_mse_[c.label()] = r.err.mse;
    std::string a = "-", ratio = "-", verdict = "";
    if (anchor) {
      const double q = r.err.mse / *anchor;
      const bool pass = q >= 0.8 && q <= 1.2;
      a = Fmt("%g", *anchor);
      ratio = Fmt("%.2f", q);
      verdict = pass ? "PASS" : "FAIL";
      const bool bf16_rs = c.phases == Phases::kAG && !c.f32_partials;
      if (bf16_rs) verdict = "gap";
      if (check && !bf16_rs) {
        ++anchor_total_;
        if (pass) ++anchor_pass_;
        else {
          ok_ = false;
          errors_.push_back(c.label() + " at block " + std::to_string(s_.block) + ": MSE " + Sci(r.err.mse) +
                            " is " + ratio + "x the paper's " + a);
        }
      }
    }
    if (c.algo == Algorithm::kTwoShot && c.phases == Phases::kRSAG && c.codec == Codec::kInt8 &&
        c.rounding == Rounding::kNearest) {
      // Beyond the paper: the target for two-shot is an upper bound, not a +-20% anchor.
      const bool pass = r.err.mse <= kTwoShotTarget;
      a = "<= " + Fmt("%g", kTwoShotTarget);
      ratio = Fmt("%.2f", r.err.mse / kTwoShotTarget);
      verdict = pass ? "PASS" : "FAIL";
      if (check) {
        ++anchor_total_;
        if (pass) ++anchor_pass_;
        else {
          ok_ = false;
          errors_.push_back(c.label() + ": MSE " + Sci(r.err.mse) + " above the target " + a);
        }
      }
    }
    rep_->Line("| " + block + " | " + c.label() + " | " + Sci(r.err.mse) + " | " + a + " | " + ratio +
               " | " + verdict + " | " + Sci(r.err.rel_rms) + " | " + Sci(r.err.max_abs) + " | " +
               Fmt("%.0f", r.call.mean_bytes_per_rank()) + " | " + Ratio(ring_bytes, r.call.mean_bytes_per_rank()) +
               " | " + (r.first_bad_rank < 0 ? "yes" : "NO") + " |");
  }

  void Fatal(const Status& st) {
    ok_ = false;
    errors_.push_back(st.ToString());
    rep_->Line("error: " + st.ToString());
  }

  // The Table I inputs, generated once for sections 1 and 4.
  Bf16Experiment* TableIExperiment() {
    if (!table1_) {
      GenSpec g;
      g.dist = Distribution::kNormal;
      g.seed = s_.seed;
      g.cols = s_.cols;
      if (Status st = Bf16Experiment::Create(int(s_.ranks), s_.size, g, &table1_); !st.ok()) {
        Fatal(st);
        return nullptr;
      }
    }
    return table1_.get();
  }

  const Settings& s_;
  Report* rep_;
  std::unique_ptr<Bf16Experiment> table1_;
  double table1_ring_bytes_ = 0;
  bool ok_ = true;
  size_t anchor_pass_ = 0, anchor_total_ = 0;
  std::vector<std::string> errors_;
  std::map<std::string, double> default_mse_;  // label -> MSE at the default block
};

// "a,b,c" -> parsed values; false if any is unknown or the list is empty.
template <typename T>
bool ParseList(const std::string& text, std::optional<T> (*parse)(std::string_view), std::vector<T>* out) {
  out->clear();
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const std::optional<T> v = parse(item);
    if (!v) return false;
    out->push_back(*v);
  }
  return !out->empty();
}

std::string CommandLine(int argc, char** argv) {
  std::string s = "equarx-accuracy";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    s += " " + (a.find_first_of(" \t'\"$") == std::string::npos ? a : "'" + a + "'");
  }
  return s;
}

int Main(int argc, char** argv) {
  Settings s;
  ArgParser p("equarx-accuracy", "[options]");
  p.AddSize("size", &s.size, "elements per rank in the Table I run (default 16M = 4096x4096)");
  p.AddUint("ranks", &s.ranks, "ranks in the Table I and distribution runs (default 8)");
  p.AddUint("seed", &s.seed, "base seed of the generators (default 1)");
  p.AddSize("block", &s.block, "default block: the anchor check and sections 2, 3 (default 64)", "B");
  p.AddSize("sweep-size", &s.sweep_size, "elements per rank in sections 2 and 3 (default 1M)");
  p.AddUint("max-ranks", &s.max_ranks, "largest world size of section 3 (default 16)");
  p.AddString("sections", &s.sections, "comma list of table1,dist,ranks,formats,feedback (default all)", "LIST");
  p.AddString("algo", &s.algos, "algorithms of sections 4-5 (default " + s.algos + ")", "LIST");
  p.AddString("phases", &s.phases, "phases of section 4 (default " + s.phases + ")", "LIST");
  p.AddString("codec", &s.codecs, "codecs of sections 4-5 (default " + s.codecs + ")", "LIST");
  p.AddString("rounding", &s.roundings, "roundings of section 4 (default " + s.roundings + ")", "LIST");
  p.AddUint("feedback-calls", &s.feedback_calls, "repeated calls of section 5 (default 16)", "K");
  p.AddUint("timeout-ms", &s.timeout_ms, "per-call deadline in ms (0 = library default)", "MS");
  p.AddFlag("quick", &s.quick, "CI-sized run (256K elements, blocks 64/128, 64K sweeps; seconds)");
  p.AddString("out", &s.out, "write the markdown report to this file (e.g. docs/accuracy.md)", "FILE");
  if (Status st = p.Parse(argc, argv); !st.ok()) {
    std::fprintf(stderr, "equarx-accuracy: %s\n(run equarx-accuracy --help for usage)\n", st.message().c_str());
    return 2;
  }
  if (p.help_requested()) {
    std::fputs(p.Help().c_str(), stdout);
    return 0;
  }
  if (!p.positional().empty()) {
    std::fprintf(stderr, "equarx-accuracy: unexpected argument '%s'\n", p.positional()[0].c_str());
    return 2;
  }
  if (s.quick) {
    if (!p.seen("size")) s.size = size_t(512) * 512;
    if (!p.seen("sweep-size")) s.sweep_size = size_t(1) << 16;
  }
  if (s.ranks < 1 || s.ranks > 256 || s.max_ranks > 256) {
    std::fprintf(stderr, "equarx-accuracy: --ranks/--max-ranks must be in [1, 256]\n");
    return 2;
  }
  if (s.block < kMinBlock || s.block > kMaxBlock || s.size == 0 || s.sweep_size == 0) {
    std::fprintf(stderr, "equarx-accuracy: --block must be in [%zu, %zu]; sizes must be > 0\n", kMinBlock, kMaxBlock);
    return 2;
  }
  std::string bad;
  if (!ParseList(s.algos, ParseAlgorithm, &s.algo_list)) bad = "--algo " + s.algos;
  if (!ParseList(s.phases, ParsePhases, &s.phases_list)) bad = "--phases " + s.phases;
  if (!ParseList(s.codecs, ParseCodec, &s.codec_list)) bad = "--codec " + s.codecs;
  if (!ParseList(s.roundings, ParseRounding, &s.rounding_list)) bad = "--rounding " + s.roundings;
  if (!bad.empty() || s.feedback_calls < 1 || s.feedback_calls > 10000) {
    std::fprintf(stderr, "equarx-accuracy: bad list %s (see --help for the names)\n",
                 bad.empty() ? "--feedback-calls" : bad.c_str());
    return 2;
  }
  const bool do_t1 = s.sections.find("table1") != std::string::npos;
  const bool do_dist = s.sections.find("dist") != std::string::npos;
  const bool do_ranks = s.sections.find("ranks") != std::string::npos;
  const bool do_formats = s.sections.find("formats") != std::string::npos;
  const bool do_feedback = s.sections.find("feedback") != std::string::npos;

  const auto t0 = std::chrono::steady_clock::now();
  Report rep;
  rep.Line("# equarx accuracy report");
  rep.Line();
  rep.Line("Generated by `equarx-accuracy` (tools/accuracy); regenerate with:");
  rep.Line();
  rep.Line("```");
  rep.Line(CommandLine(argc, argv));
  rep.Line("```");
  rep.Line();
  rep.Line("Settings: Table I " + std::to_string(s.ranks) + " ranks x " + std::to_string(s.size) +
           " elements per rank; sections 2-3 " + std::to_string(s.sweep_size) + " elements per rank, world sizes up to " +
           std::to_string(s.max_ranks) + "; seed " + std::to_string(s.seed) + "; default block " +
           std::to_string(s.block) + "; codec int8 (symmetric absmax per block, f32 scales, RNE, saturating) unless a row names another; "
           "inputs drawn in f64 (splitmix64 counter stream + Box-Muller, stream = rank) and rounded to bf16 "
           "(RNE); reference = bf16(exact f64 sum of the bf16 inputs), rounded once; statistics over rank 0's "
           "result (all ranks are checked bitwise equal); wire bytes are Communicator::stats().bytes_sent deltas "
           "of the call, including the validation descriptor each rank exchanges first (options.validate). Inputs are bf16, so every configuration, including "
           "the unquantized ring (bf16 on the wire), rounds partial sums to bf16 or coarser. The numbers "
           "depend only on these settings, not on the machine or thread count.");
  rep.Line();
  Runner run(s, &rep);
  if (do_t1) run.TableI();
  if (do_dist) run.Distributions();
  if (do_ranks) run.WorldSizes();
  if (do_formats) run.Formats();
  if (do_feedback) run.Feedback();
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!run.errors().empty()) {
    rep.Line("## Problems");
    rep.Line();
    for (const std::string& e : run.errors()) rep.Line("- " + e);
    rep.Line();
  }
  rep.Line(std::string("Result: ") + (run.ok() ? "OK" : "FAILED") +
           (do_t1 ? " (" + std::to_string(run.anchor_pass()) + "/" + std::to_string(run.anchor_total()) +
                        " anchor rows at block " + std::to_string(s.block) + " within +-20%)"
                  : std::string()));
  std::fprintf(stderr, "equarx-accuracy: finished in %.1f s\n", sec);
  if (!s.out.empty()) {
    std::ofstream f(s.out, std::ios::trunc);
    f << rep.text();
    f.close();
    if (!f) {
      std::fprintf(stderr, "equarx-accuracy: cannot write %s\n", s.out.c_str());
      return 1;
    }
  }
  return run.ok() ? 0 : 1;
}

}  // namespace
}  // namespace equarx::tools

int main(int argc, char** argv) { return equarx::tools::Main(argc, argv); }
