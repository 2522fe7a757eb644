// equarx tune table (see tune_table.h).
#include "algo/tune_table.h"
#include "common/hash.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace equarx::algo {

TuneTable TuneTable::Defaults() {
  TuneTable t;
  // Below 256 KiB quantization does not pay for itself (latency and codec work dominate); from
  // there on the bidirectional full loop is the fastest quantized schedule on bandwidth-bound
  // rings. Measured crossovers for a given network come from equarx-tune.
  t.fallback = {{0, Algorithm::kRing, Phases::kRSAG},
                {size_t(256) << 10, Algorithm::kFullBidir, Phases::kRSAG}};
  return t;
}

namespace {

Status LineError(int line, const std::string& what) {
  return InvalidArgument("tune table line " + std::to_string(line) + ": " + what);
}

}  // namespace

Status TuneTable::Parse(const std::string& text, TuneTable* out) {
  TuneTable t = Defaults();
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  bool header = false;
  while (std::getline(in, raw)) {
    ++line;
    const size_t hash = raw.find('#');
    if (hash != std::string::npos) raw.resize(hash);
    std::istringstream ls(raw);
    std::string word;
    if (!(ls >> word)) continue;
    if (!header) {
      int version = 0;
      if (word != "equarx-tune" || !(ls >> version) || version != 1)
        return LineError(line, "expected 'equarx-tune 1' as the first line");
      header = true;
      continue;
    }
    if (word == "section") {
      TuneSection s;
      std::string a, b, extra;
      if (!(ls >> a >> b) || (ls >> extra) || a.rfind("ranks=", 0) != 0 || b.rfind("dtype=", 0) != 0)
        return LineError(line, "expected 'section ranks=N dtype=T'");
      char* end = nullptr;
      const long r = std::strtol(a.c_str() + 6, &end, 10);
      if (*end || r < 1 || r > 4096) return LineError(line, "bad ranks '" + a.substr(6) + "'");
      auto dt = ParseDType(b.substr(6));
      if (!dt) return LineError(line, "bad dtype '" + b.substr(6) + "'");
      s.ranks = int(r);
      s.dtype = *dt;
      t.sections.push_back(s);
      continue;
    }
    if (word == "rule") {
      if (t.sections.empty()) return LineError(line, "rule before any section");
      std::string bytes, algo, phases, extra;
      if (!(ls >> bytes >> algo >> phases) || (ls >> extra))
        return LineError(line, "expected 'rule MIN_BYTES ALGORITHM PHASES'");
      char* end = nullptr;
      const unsigned long long b = std::strtoull(bytes.c_str(), &end, 10);
      if (*end || bytes.empty() || bytes[0] == '-') return LineError(line, "bad size '" + bytes + "'");
      auto a = ParseAlgorithm(algo);
      auto p = ParsePhases(phases);
      if (!a || *a == Algorithm::kAuto) return LineError(line, "bad algorithm '" + algo + "'");
      if (!p) return LineError(line, "bad phases '" + phases + "'");
      auto& rules = t.sections.back().rules;
      if (rules.empty() ? b != 0 : b <= rules.back().min_bytes)
        return LineError(line, "rules must start at 0 and grow strictly");
      rules.push_back({size_t(b), *a, *p});
      continue;
    }
    return LineError(line, "unknown item '" + word + "'");
  }
  if (!header) return InvalidArgument("tune table is empty (expected 'equarx-tune 1')");
  for (const TuneSection& s : t.sections)
    if (s.rules.empty()) return InvalidArgument("tune table: a section has no rules");
  *out = std::move(t);
  return Status::Ok();
}

Status TuneTable::Load(const std::string& path, TuneTable* out) {
  std::ifstream f(path);
  if (!f) return InvalidArgument("cannot read tune table '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  Status st = Parse(ss.str(), out);
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  return Status::Ok();
}

TuneRule TuneTable::Lookup(int ranks, DType dtype, size_t bytes) const {
  const std::vector<TuneRule>* rules = &fallback;
  for (const TuneSection& s : sections)
    if (s.ranks == ranks && s.dtype == dtype) rules = &s.rules;
  TuneRule r = rules->front();
  for (const TuneRule& x : *rules)
    if (bytes >= x.min_bytes) r = x;
  return r;
}

std::string TuneTable::ToText() const {
  std::string s = "equarx-tune 1\n";
  for (const TuneSection& sec : sections) {
    s += "section ranks=" + std::to_string(sec.ranks) + " dtype=" + std::string(DTypeName(sec.dtype)) + "\n";
    for (const TuneRule& r : sec.rules)
      s += "rule " + std::to_string(r.min_bytes) + " " + std::string(AlgorithmName(r.algorithm)) + " " +
           std::string(PhasesName(r.phases)) + "\n";
  }
  return s;
}

uint64_t TuneTable::Hash() const {
  std::string text = ToText();
  for (const TuneRule& r : fallback)
    text += "fallback " + std::to_string(r.min_bytes) + " " + std::to_string(int(r.algorithm)) + "\n";
  return common::Fnv1a(text.data(), text.size());
}

}  // namespace equarx::algo
