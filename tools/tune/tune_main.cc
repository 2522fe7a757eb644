// equarx-tune — measures the crossover table that algorithm=auto uses, on the user's own
// ranks, network and dtype, and writes it for EQUARX_TUNE_FILE.
//
//   equarx-tune -b 1K -e 64M -f 2 -n 10 -d bf16 --out equarx.tune [--ranks 4]   (or under mpirun)
//
// For every size it times the unquantized ring and each candidate side by side (median of the
// slowest rank over the iterations) and keeps the fastest unquantized schedule unless a
// quantized one is faster by more than --margin (5%), the rule the cost model's table follows
// (cost_model.cc). The candidates are the schedules auto chooses from (--candidates: any
// algorithm but auto and the ring, each with its phases): the unquantized one_shot_raw and
// recursive_doubling for the smallest calls, one_shot, two_shot and the int8 rings above.
// Runs of equal choices become rules "from this size on". An existing file keeps its other
// sections.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "algo/tune_table.h"
#include "args.h"
#include "equarx/equarx.hpp"
#include "job.h"
#include "launch.h"
#include "world.h"

namespace {

using namespace equarx;

struct Candidate {
  Algorithm algorithm;
  Phases phases;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t min_bytes = 1 << 10, max_bytes = 64 << 20, factor = 2;
  uint64_t iters = 10, warmup = 3, ranks = 4;
  std::string dtype_name = "bf16", out_path = "equarx.tune", cands =
      "one_shot_raw,recursive_doubling,one_shot,two_shot:rs+ag,full:rs+ag,full_bidir:rs+ag,semi:rs+ag";
  std::string margin_text = "0.05";
  tools::ArgParser p("equarx-tune", "measure the size crossover table for algorithm=auto");
  p.AddSize("minbytes", &min_bytes, "-b: smallest size in bytes");
  p.AddSize("maxbytes", &max_bytes, "-e: largest size in bytes");
  p.AddSize("stepfactor", &factor, "-f: size factor per step");
  p.AddUint("iters", &iters, "-n: timed iterations per size and candidate");
  p.AddUint("warmup_iters", &warmup, "-w: warm-up iterations");
  p.AddString("datatype", &dtype_name, "-d: f32, bf16 or f16");
  p.AddString("out", &out_path, "table file to write (other sections kept)", "FILE");
  p.AddString("candidates", &cands, "candidates beside the ring as algo[:phases], comma-separated");
  p.AddString("margin", &margin_text, "a quantized candidate must beat the fastest unquantized one by this fraction (0.05)");
  p.AddUint("ranks", &ranks, "in-process ranks (ignored under mpirun)");
  for (auto [c, name] : {std::pair{'b', "minbytes"}, {'e', "maxbytes"}, {'f', "stepfactor"},
                         {'n', "iters"}, {'w', "warmup_iters"}, {'d', "datatype"}})
    p.AddShort(c, name);
  if (auto rc = p.ParseCommandLine(argc, argv)) return *rc;
  auto dtype = ParseDType(dtype_name);
  char* end = nullptr;
  const double margin = std::strtod(margin_text.c_str(), &end);
  std::vector<Candidate> candidates;
  std::stringstream cs(cands);
  for (std::string item; std::getline(cs, item, ',');) {
    const size_t colon = item.find(':');
    auto a = ParseAlgorithm(item.substr(0, colon));
    auto ph = ParsePhases(colon == std::string::npos ? "rs+ag" : item.substr(colon + 1));
    if (!a || !ph || *a == Algorithm::kAuto || *a == Algorithm::kRing) {
      std::fprintf(stderr, "equarx-tune: bad candidate '%s'\n", item.c_str());
      return 2;
    }
    candidates.push_back({*a, *ph});
  }
  if (!dtype || *end || margin < 0 || factor < 2 || min_bytes == 0 || min_bytes > max_bytes ||
      iters == 0 || candidates.empty() || ranks < 2) {
    std::fprintf(stderr, "equarx-tune: bad dtype, margin, sizes, iterations, candidates or ranks (>= 2)\n");
    return 2;
  }

  algo::TuneSection section;
  section.dtype = *dtype;
  bool failed = false;
  auto body = [&](tools::World& w) {
    const size_t es = DTypeSize(*dtype);
    std::vector<uint8_t> send(max_bytes / es * es, 0x3F), recv(send.size());
    std::vector<Candidate> all{{Algorithm::kRing, Phases::kRSAG}};
    all.insert(all.end(), candidates.begin(), candidates.end());
    if (w.rank() == 0)
      std::printf("# equarx-tune: %d ranks (%s), dtype %s, margin %.0f%%\n# %10s %10s %s\n", w.size(),
                  w.transport().c_str(), dtype_name.c_str(), margin * 100, "size", "choice",
                  "time(us) per candidate");
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
      const size_t count = bytes / es;
      std::vector<double> med;
      for (const Candidate& c : all) {
        AllReduceOptions o;
        o.algorithm = c.algorithm;
        o.phases = c.phases;
        std::vector<double> t(iters);
        Status s;
        for (uint64_t i = 0; i < warmup + iters && s.ok(); ++i) {
          w.Barrier();
          const auto t0 = std::chrono::steady_clock::now();
          s = w.comm().AllReduce(send.data(), recv.data(), count, *dtype, o);
          if (i >= warmup) t[i - warmup] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        tools::EndJobIfFailed(w.comm());  // before MPI waits on a broken group
        double bad = s.ok() ? 0 : 1;
        w.MaxInPlace(&bad, 1);
        if (bad) {
          if (!s.ok()) std::fprintf(stderr, "rank %d: %s\n", w.rank(), s.ToString().c_str());
          failed = true;
          return;
        }
        w.MaxInPlace(t.data(), t.size());
        med.push_back(Median(t));
      }
      size_t plain = 0, quantized = 0;  // all[0] is the ring; quantized = 0: none timed
      for (size_t i = 1; i < med.size(); ++i) {
        if (!IsQuantized(all[i].algorithm)) {
          if (med[i] < med[plain]) plain = i;
        } else if (quantized == 0 || med[i] < med[quantized]) {
          quantized = i;
        }
      }
      const size_t best = quantized > 0 && med[quantized] < med[plain] * (1 - margin) ? quantized : plain;
      if (w.rank() != 0) continue;
      const Candidate& c = all[best];
      std::string line;
      for (size_t i = 0; i < med.size(); ++i)
        line += " " + std::string(AlgorithmName(all[i].algorithm)) + "=" + std::to_string(int(med[i] * 1e6));
      std::printf("  %10zu %10s%s\n", bytes, std::string(AlgorithmName(c.algorithm)).c_str(), line.c_str());
      std::fflush(stdout);
      auto& rules = section.rules;
      if (rules.empty()) rules.push_back({0, c.algorithm, c.phases});
      else if (rules.back().algorithm != c.algorithm || rules.back().phases != c.phases)
        rules.push_back({bytes, c.algorithm, c.phases});
    }
    if (w.rank() == 0) section.ranks = w.size();
  };
  const Status st =
      tools::UnderMpirun() ? tools::RunMpi(&argc, &argv, body) : tools::RunInProcess(int(ranks), body);
  if (!st.ok() || failed) {
    std::fprintf(stderr, "equarx-tune: %s\n", st.ok() ? "a measurement failed" : st.ToString().c_str());
    return 1;
  }
  if (section.ranks == 0) return 0;  // not rank 0 under mpirun
  algo::TuneTable table;
  std::ifstream existing(out_path);
  if (existing && !algo::TuneTable::Load(out_path, &table).ok()) {
    std::fprintf(stderr, "equarx-tune: %s exists and is not a tune table; not overwriting\n", out_path.c_str());
    return 1;
  }
  table.sections.erase(std::remove_if(table.sections.begin(), table.sections.end(),
                                      [&](const algo::TuneSection& s) {
                                        return s.ranks == section.ranks && s.dtype == section.dtype;
                                      }),
                       table.sections.end());
  table.sections.push_back(section);
  std::ofstream out(out_path);
  out << "# written by equarx-tune; use with EQUARX_TUNE_FILE=" << out_path << "\n" << table.ToText();
  if (!out) {
    std::fprintf(stderr, "equarx-tune: cannot write %s\n", out_path.c_str());
    return 1;
  }
  std::printf("# wrote %s\n", out_path.c_str());
  return 0;
}
