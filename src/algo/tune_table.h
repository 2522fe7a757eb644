// equarx tune table: which algorithm `auto` uses at which message size.
//
// A table has sections, one per (ranks, dtype); a section is a list of rules "from this many
// bytes on, use this algorithm and phases", sorted by size. equarx-tune measures a table on
// the user's own setup and writes it; EQUARX_TUNE_FILE points the library at it. Without a
// file auto asks the cost model, which writes a table of the same form (cost_model.h,
// ModelTuneTable). Without a section for the call's ranks and dtype the built-in rules apply.
//
// File format (text, one item per line, '#' starts a comment):
//   equarx-tune 1
//   section ranks=4 dtype=bf16
//   rule 0 ring rs+ag
//   rule 1048576 full_bidir rs+ag
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "equarx/status.h"
#include "equarx/types.h"

namespace equarx::algo {

struct TuneRule {
  size_t min_bytes = 0;
  Algorithm algorithm = Algorithm::kRing;
  Phases phases = Phases::kRSAG;
};

struct TuneSection {
  int ranks = 0;
  DType dtype = DType::kFloat32;
  std::vector<TuneRule> rules;  // sorted by min_bytes, first one at 0
};

class TuneTable {
 public:
  /// The built-in defaults (see docs/configuration.md for where they come from).
  static TuneTable Defaults();
  /// A table whose one rule applies to every call.
  static TuneTable Single(const TuneRule& rule) {
    TuneTable t;
    t.fallback = {TuneRule{0, rule.algorithm, rule.phases}};
    return t;
  }
  /// Parses the file format above; clear errors name the line.
  static Status Parse(const std::string& text, TuneTable* out);
  static Status Load(const std::string& path, TuneTable* out);

  /// The rule for a call (falls back to the defaults' rules without a matching section).
  TuneRule Lookup(int ranks, DType dtype, size_t bytes) const;
  /// Stable 64-bit hash of the contents (ranks compare it so that all use the same table).
  uint64_t Hash() const;
  std::string ToText() const;

  std::vector<TuneSection> sections;
  std::vector<TuneRule> fallback;  // rules used when no section matches
};

}  // namespace equarx::algo
