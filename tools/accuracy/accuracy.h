// equarx-accuracy — what the report's sections share: the settings, one configuration of a
// row, the report being written, number formatting. Sections live in accuracy_main.cc (Table
// I, distributions, world sizes, codecs, rotation), feedback.cc and activations.cc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "equarx/options.h"
#include "equarx/types.h"

namespace equarx::tools {

struct Config {
  Algorithm algo;
  Phases phases;
  bool f32_partials = false;  // the unquantized RS of phases=ag carries f32, not bf16
  Codec codec = Codec::kInt8;
  Rounding rounding = Rounding::kNearest;
  Rotation rotation = Rotation::kNone;  // pinned: the paper's rows never rotate
  ScaleFormat scale = ScaleFormat::kF32;
  // "algo phases [f32-partials]"
  std::string base_label() const {
    if (!TakesCodec(algo)) return std::string(AlgorithmName(algo));
    return std::string(AlgorithmName(algo)) + " " + std::string(PhasesName(phases)) +
           (f32_partials ? " f32-partials" : "");
  }
  // The base label, plus the codec and rounding where they are not int8 / nearest.
  std::string label() const {
    std::string l = base_label();
    if (codec != Codec::kInt8) l += " " + std::string(CodecName(codec));
    if (rounding != Rounding::kNearest) l += " " + std::string(RoundingName(rounding));
    if (rotation == Rotation::kHadamard) l += " hadamard";
    if (scale != ScaleFormat::kF32) l += " " + std::string(ScaleFormatName(scale)) + "-scale";
    return l;
  }
};


inline std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
inline std::string Sci(double v) { return Fmt("%.3e", v); }
inline std::string Ratio(double base, double v) { return v > 0 && base > 0 ? Fmt("%.2fx", base / v) : "-"; }

// Every codec of the library's table, comma-separated: --codec's default.
inline std::string AllCodecs() {
  size_t n = 0;
  const EnumInfo* t = CodecTable(&n);
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? "," : "") + std::string(t[i].name);
  return s;
}

struct Settings {
  // Section 4 and 5: the lists, as given.
  std::string algos = "full,full_bidir,semi,two_shot";
  std::string phases = "rs+ag";
  std::string codecs = AllCodecs();
  std::string roundings = "nearest,stochastic";
  std::string rotations = "none";  // section 4; sections 1 and 1b pin their own
  uint64_t feedback_calls = 16;
  std::vector<Algorithm> algo_list;
  std::vector<Phases> phases_list;
  std::vector<Codec> codec_list;
  std::vector<Rounding> rounding_list;
  std::vector<Rotation> rotation_list;
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
  std::string activations;  // section 6: a directory of dumped AllReduce operands
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


/// The options of one row (seed, timeout and block from the settings).
inline AllReduceOptions OptionsFor(const Settings& s, const Config& c, size_t block) {
  return AllReduceOptions{.algorithm = c.algo, .phases = c.phases, .codec = c.codec, .block = block,
                          .scale = c.scale, .rounding = c.rounding, .seed = s.seed,
                          .f32_partials = c.f32_partials, .timeout_ms = uint32_t(s.timeout_ms),
                          .rotation = c.rotation};
}

/// Section 5 (feedback.cc): error feedback over repeated calls. False on a failure (listed in
/// *errors).
bool FeedbackSection(const Settings& s, Report* rep, std::vector<std::string>* errors);
/// Section 6 (activations.cc): the AllReduce operands of a real model (s.activations).
bool ActivationsSection(const Settings& s, Report* rep, std::vector<std::string>* errors);

}  // namespace equarx::tools
