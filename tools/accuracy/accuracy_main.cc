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
// Section 4 runs every codec (`--codec`, default all of the library's codec table) x rounding
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
#include "accuracy.h"
#include "experiment.h"
#include "half.h"
#include "random.h"

namespace equarx::tools {
namespace {

std::optional<double> AnchorOf(const Config& c) {
  if (c.codec != Codec::kInt8 || c.rounding != Rounding::kNearest) return std::nullopt;
  if (c.algo == Algorithm::kNaiveFp8) return 0.13;
  const bool full = c.algo == Algorithm::kFull || c.algo == Algorithm::kFullBidir;
  if (full && c.phases == Phases::kRSAG) return 0.0014;
  if (c.algo == Algorithm::kSemi && c.phases == Phases::kRSAG) return 0.001;
  // Not a paper figure: the target for two-shot, MSE <= 0.0008 (checked separately).
  // AG-only against the BF16 AllReduce output: the paper's reference is a unidirectional ring,
  // and only `full` runs the same unquantized reduce-scatter (same order, same bf16 partials).
  if (c.algo == Algorithm::kFull && c.phases == Phases::kAG && !c.f32_partials) return 0.0003;
  return std::nullopt;
}

constexpr double kTwoShotTarget = 0.0008;  // issue target: about half of full's 0.0014

class Runner {
 public:
  Runner(const Settings& s, Report* rep) : s_(s), rep_(rep) {}

  bool ok() const { return ok_; }
  size_t anchor_pass() const { return anchor_pass_; }
  size_t anchor_total() const { return anchor_total_; }

  AllReduceOptions Options(const Config& c, size_t block) const { return OptionsFor(s_, c, block); }

  // Runs one configuration; records failures. Returns false if the call failed.
  bool RunOne(Bf16Experiment& e, const Config& c, size_t block, RunResult* r,
              const std::vector<AllReduceExtras>* extras = nullptr) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = e.Run(Options(c, block), r, true, extras);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "  [%d ranks x %zu] %-18s block %4zu: %s (%.2f s)\n", e.ranks(), e.count(),
                 c.label().c_str(), block, st.ok() ? Sci(r->err.mse).c_str() : st.ToString().c_str(), sec);
    const std::string where = c.label() + " block " + std::to_string(block) + ": ";
    if (!st.ok()) {
      Fail(where + st.ToString());
      return false;
    }
    if (r->outside_bound > 0)
      Fail(where + std::to_string(r->outside_bound) + " elements outside the error bound");
    if (r->first_bad_rank >= 0)
      Fail(where + "rank " + std::to_string(r->first_bad_rank) + " differs bitwise from rank 0");
    return true;
  }

  const std::vector<std::string>& errors() const { return errors_; }

  void TableI() {
    const size_t n = s_.size;
    rep_->Line("## 1. Table I setting: " + std::to_string(s_.ranks) + " ranks x " + std::to_string(n) +
               " bf16 N(0,1) values, int8");
    rep_->Line();
    rep_->Line("`MSE vs ring` is the paper's measure: the MSE of the bf16 result against the unquantized "
               "bf16 ring's result (the BF16 AllReduce output). `MSE vs exact` is against bf16(exact f64 sum "
               "of the bf16 inputs). Anchors are the paper's Table I, checked on `MSE vs ring`; PASS = within "
               "+-20%. `wire/rank` = bytes one rank sent (mean over ranks); `ring/this` = bf16 ring wire "
               "bytes divided by this row's. Every row here is the paper's setting: no rotation, f32 scales.");
    rep_->Line();
    Bf16Experiment* e = TableIExperiment();
    if (!e) return;
    rep_->Line("| block | configuration | MSE vs ring | anchor | ratio | +-20% | MSE vs exact | rel RMS | max abs | wire/rank | ring/this | ranks agree |");
    rep_->Line("|---:|---|---:|---:|---:|:---:|---:|---:|---:|---:|---:|:---:|");
    RunResult ring;
    if (!RunOne(*e, {Algorithm::kRing, Phases::kRSAG}, s_.block, &ring)) return;
    ring_out_.assign(e->result(0), e->result(0) + e->count());
    const double ring_bytes = ring.call.mean_bytes_per_rank();
    table1_ring_bytes_ = ring_bytes;
    Row("-", {Algorithm::kRing, Phases::kRSAG}, ring, 0.0, ring_bytes, false);
    RunResult naive;
    if (RunOne(*e, {Algorithm::kNaiveFp8, Phases::kRSAG}, s_.block, &naive))
      Row("-", {Algorithm::kNaiveFp8, Phases::kRSAG}, naive, e->MeasureAgainst(ring_out_).mse, ring_bytes, true);
    std::vector<size_t> blocks = {s_.block};
    for (size_t b : s_.quick ? std::vector<size_t>{64, 128} : std::vector<size_t>{64, 128, 32, 256})
      if (b != s_.block) blocks.push_back(b);
    for (size_t b : blocks) {
      for (Algorithm a : {Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi, Algorithm::kTwoShot}) {
        for (Config c : std::vector<Config>{{a, Phases::kRS}, {a, Phases::kAG}, {a, Phases::kAG, true},
                                            {a, Phases::kRSAG}}) {
          RunResult r;
          if (RunOne(*e, c, b, &r))
            Row(std::to_string(b), c, r, e->MeasureAgainst(ring_out_).mse, ring_bytes, b == s_.block);
        }
      }
    }
    rep_->Line();
    rep_->Line("Anchor rows at the default block " + std::to_string(s_.block) + ": " +
               std::to_string(anchor_pass_) + " of " + std::to_string(anchor_total_) + " within +-20%.");
    rep_->Line();
    rep_->Line("Against the bf16 ring's output the AG-only anchor is met by `full ag` without f32 partial "
               "sums: its unquantized reduce-scatter is the reference ring's own (same direction, same "
               "order), so the bf16 rounding of the partial sums is common to both and only the quantized "
               "all-gather differs. `full_bidir ag` and `semi ag` sum in other orders, so their bf16 "
               "partials differ from the reference's and their MSE vs ring adds that difference (no "
               "anchor). Against the exact sum every `ag` row carries the bf16 partials' rounding (about "
               "the `ring` row's MSE vs exact); the `ag f32-partials` rows, whose unquantized "
               "reduce-scatter carries f32, show that view.");
    rep_->Line();
    Rotations(*e, ring_bytes);
  }

  // Section 1b: rotation and block-scale formats on the Table I data (Gaussian: the rotation
  // must not lose here), at the default block with f32 scales, at block 32 with bf16 scales and
  // at block 128 with two-level scales.
  void Rotations(Bf16Experiment& e, double ring_bytes) {
    rep_->Line("### 1b. Rotation and block-scale formats on the Table I data");
    rep_->Line();
    rep_->Line("The same inputs with `rotation = hadamard` (randomized Walsh-Hadamard per block before "
               "the first encode, inverted after the last decode), with bf16 block scales at block 32 "
               "(the bytes of block 64 with f32 scales) and with two-level scales at block 128 (a bf16 "
               "scale per block and a 4-bit multiplier per 8 elements; the rotation then works on "
               "blocks of 16). N(0,1) data has no outliers, so the rotation can only keep the error, "
               "not lower it: this checks that it does not lose here.");
    rep_->Line();
    rep_->Line("| block | scale | configuration | MSE vs ring | MSE vs exact | none / hadamard | wire/rank | ring/this | ranks agree |");
    rep_->Line("|---:|---|---|---:|---:|---:|---:|---:|:---:|");
    struct Variant { size_t block; ScaleFormat scale; };
    for (Variant v : {Variant{s_.block, ScaleFormat::kF32}, Variant{32, ScaleFormat::kBF16},
                      Variant{128, ScaleFormat::kTwoLevel}})
      for (Algorithm a : {Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi, Algorithm::kTwoShot}) {
        double none_mse = 0;
        for (Rotation rot : {Rotation::kNone, Rotation::kHadamard}) {
          Config c{a, Phases::kRSAG};
          c.rotation = rot;
          c.scale = v.scale;
          RunResult r;
          if (!RunOne(e, c, v.block, &r)) continue;
          const double mse_ring = e.MeasureAgainst(ring_out_).mse;
          if (rot == Rotation::kNone) none_mse = mse_ring;
          rep_->Line("| " + std::to_string(v.block) + " | " + std::string(ScaleFormatName(v.scale)) + " | " +
                     c.label() + " | " + Sci(mse_ring) + " | " + Sci(r.err.mse) + " | " +
                     (rot == Rotation::kHadamard ? Fmt("%.3f", mse_ring > 0 ? none_mse / mse_ring : 0.0) : "-") +
                     " | " + Fmt("%.0f", r.call.mean_bytes_per_rank()) + " | " +
                     Ratio(ring_bytes, r.call.mean_bytes_per_rank()) + " | " +
                     (r.first_bad_rank < 0 ? "yes" : "NO") + " |");
        }
      }
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
               std::to_string(s_.seed) + " (integer codecs only). MSE against bf16(exact sum) as in "
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
          for (Phases ph : s_.phases_list)
            for (Rotation rot : s_.rotation_list) {
            Config c{a, ph};
            c.codec = codec;
            c.rounding = rounding;
            c.rotation = rot;
            std::vector<AllReduceStats> stats(size_t(e->ranks()));
            std::vector<AllReduceExtras> extras(size_t(e->ranks()));
            for (size_t r = 0; r < extras.size(); ++r) extras[r].stats = &stats[r];
            RunResult res;
            if (!RunOne(*e, c, s_.block, &res, &extras)) continue;
            uint64_t clipped = 0;
            for (const AllReduceStats& st : stats) clipped += st.clipped;
            rep_->Line("| " + std::string(CodecName(codec)) + " | " + std::string(RoundingName(rounding)) +
                       " | " + c.base_label() + (rot == Rotation::kHadamard ? " hadamard" : "") + " | " +
                       Sci(res.err.mse) + " | " + Sci(res.err.rel_rms) + " | " +
                       Sci(res.err.max_abs) + " | " + Fmt("%.0f", res.call.mean_bytes_per_rank()) + " | " +
                       Ratio(table1_ring_bytes_, res.call.mean_bytes_per_rank()) + " | " +
                       Sci(stats[0].rel_rms_err_est) + " | " + std::to_string(clipped) + " | " +
                       (res.first_bad_rank < 0 ? "yes" : "NO") + " |");
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
               "must be exact: #inexact 0). Reference: bf16(exact sum). #wrong = elements outside the "
               "configuration's error bound of the exact sum (0 when correct); #inexact = elements not "
               "equal to the reference.");
    rep_->Line();
    rep_->Line("| distribution | configuration | MSE | rel RMS | max abs | #wrong | #inexact | wire/rank | ring/this | ranks agree |");
    rep_->Line("|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|");
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
                   std::to_string(r.outside_bound) + " | " + std::to_string(r.err.wrong) + " | " +
                   Fmt("%.0f", r.call.mean_bytes_per_rank()) + " | " +
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
  void Fail(const std::string& why) {
    ok_ = false;
    errors_.push_back(why);
  }
  // One checked anchor or target: counted, and a failure when missed.
  void CountAnchor(bool pass, const std::string& failure) {
    ++anchor_total_;
    if (pass) ++anchor_pass_;
    else Fail(failure);
  }
  static std::vector<Config> SweepConfigs() {
    return {{Algorithm::kRing, Phases::kRSAG},      {Algorithm::kFull, Phases::kRSAG},
            {Algorithm::kFullBidir, Phases::kRSAG}, {Algorithm::kSemi, Phases::kRSAG},
            {Algorithm::kTwoShot, Phases::kRSAG},   {Algorithm::kFullBidir, Phases::kAG},
            {Algorithm::kNaiveFp8, Phases::kRSAG}};
  }

  // One Table I row; anchors are checked on `mse_ring` (against the bf16 ring's output).
  void Row(const std::string& block, const Config& c, const RunResult& r, double mse_ring,
           double ring_bytes, bool check) {
    const std::optional<double> anchor = AnchorOf(c);
    if (check || block == "-") default_mse_[c.label()] = mse_ring;
    std::string a = "-", ratio = "-", verdict = "";
    if (anchor) {
      const double q = mse_ring / *anchor;
      const bool pass = q >= 0.8 && q <= 1.2;
      a = Fmt("%g", *anchor);
      ratio = Fmt("%.2f", q);
      verdict = pass ? "PASS" : "FAIL";
      if (check)
        CountAnchor(pass, c.label() + " at block " + std::to_string(s_.block) + ": MSE vs ring " +
                              Sci(mse_ring) + " is " + ratio + "x the paper's " + a);
    }
    if (c.algo == Algorithm::kTwoShot && c.phases == Phases::kRSAG && c.codec == Codec::kInt8 &&
        c.rounding == Rounding::kNearest) {
      // Beyond the paper: the target for two-shot is an upper bound, not a +-20% anchor.
      const bool pass = mse_ring <= kTwoShotTarget;
      a = "<= " + Fmt("%g", kTwoShotTarget);
      ratio = Fmt("%.2f", mse_ring / kTwoShotTarget);
      verdict = pass ? "PASS" : "FAIL";
      if (check) CountAnchor(pass, c.label() + ": MSE vs ring " + Sci(mse_ring) + " above the target " + a);
    }
    rep_->Line("| " + block + " | " + c.label() + " | " + Sci(mse_ring) + " | " + a + " | " + ratio +
               " | " + verdict + " | " + Sci(r.err.mse) + " | " + Sci(r.err.rel_rms) + " | " +
               Sci(r.err.max_abs) + " | " +
               Fmt("%.0f", r.call.mean_bytes_per_rank()) + " | " + Ratio(ring_bytes, r.call.mean_bytes_per_rank()) +
               " | " + (r.first_bad_rank < 0 ? "yes" : "NO") + " |");
  }

  void Fatal(const Status& st) {
    Fail(st.ToString());
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
  std::map<std::string, double> default_mse_;  // label -> MSE vs ring at the default block
  std::vector<uint16_t> ring_out_;             // the bf16 ring's result on the Table I data
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
  p.AddString("rotation", &s.rotations, "rotations of section 4: none, hadamard (default " + s.rotations + ")", "LIST");
  p.AddUint("feedback-calls", &s.feedback_calls, "repeated calls of section 5 (default 16)", "K");
  p.AddUint("timeout-ms", &s.timeout_ms, "per-call deadline in ms (0 = library default)", "MS");
  p.AddFlag("quick", &s.quick, "CI-sized run (256K elements, blocks 64/128, 64K sweeps; seconds)");
  p.AddString("out", &s.out, "write the markdown report to this file (e.g. docs/accuracy.md)", "FILE");
  p.AddString("activations", &s.activations,
              "section 6: a directory of AllReduce operands (equarx-gemma3 eval --dump-activations)", "DIR");
  if (auto rc = p.ParseCommandLine(argc, argv)) return *rc;
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
  if (!ParseList(s.rotations, ParseRotation, &s.rotation_list)) bad = "--rotation " + s.rotations;
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
  std::vector<std::string> more_errors;
  bool more_ok = true;
  if (do_feedback) more_ok &= FeedbackSection(s, &rep, &more_errors);
  if (!s.activations.empty()) more_ok &= ActivationsSection(s, &rep, &more_errors);
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
