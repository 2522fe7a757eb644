// equarx-perf — AllReduce bandwidth in nccl-tests conventions, in-process or under mpirun.
//
//   equarx-perf -b 1K -e 64M -f 2 -n 20 -w 5 -c 1 -d bf16 --algo ring,full_bidir,semi
//               --phases rs+ag [--ranks 8] [-J out.jsonl]
//
// For every size and configuration: median over iterations of the slowest rank's time,
// algbw = logical bytes / time, busbw = algbw * 2(N-1)/N (logical, uncompressed bytes, so a
// codec's gain shows as higher busbw), wire bytes rank 0 sent per call (descriptor check
// included), and with -c 1 the max abs and relative RMS error against the f64 exact sum and
// #wrong: elements outside the configuration's documented error bound (tools/common/
// error_bound.h, the bound the tests' oracle uses; rotation-aware, `auto` resolved per size),
// so 0 means correct on every path. Rows not checked (-c 0, --overlap's partial modes) print
// "-" and record null. `--algo mpi` times MPI_Allreduce (f32 only) on the same buffers in the
// same run (checked against the f32 ring's bound). Under mpirun each process is one rank.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "args.h"
#include "error_bound.h"
#include "equarx/equarx.hpp"
#include "job.h"
#include "json_lines.h"
#include "launch.h"
#include "option_flags.h"
#include "world.h"
#include "random.h"
#include "stats.h"

namespace equarx::perf {
namespace {

using tools::World;

struct Config {
  std::string algo;  // an equarx algorithm name or "mpi"
  AllReduceOptions o;
  bool quantized = false;  // phases and codec apply (not mpi, ring or naive_fp8)
};

const char* ModeName(ExecutionMode m) {
  return m == ExecutionMode::kWireOnly ? "wire" : m == ExecutionMode::kCodecOnly ? "codec" : "normal";
}

struct Settings {
  size_t min_bytes = 1 << 20, max_bytes = 1 << 20, factor = 2;
  uint64_t iters = 20, warmup = 5, check = 1, ranks = 4, seed = 1;
  std::string dtype = "bf16", algos = "ring,full_bidir";
  std::string dist = "normal", json;
  bool overlap = false;
  std::string command;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// Rank r's input in f32 (after rounding to the dtype) for elements [off, off + n).
// The library's conversion (ConvertValues) between types the flags have already checked.
void Convert(DType from, const void* src, size_t n, DType to, void* dst) {
  const Status st = ConvertValues(from, src, n, to, dst);
  if (!st.ok()) {
    std::fprintf(stderr, "equarx-perf: %s\n", st.ToString().c_str());
    std::exit(1);
  }
}

void Input(const Settings& s, tools::Distribution d, DType dt, int r, size_t off, size_t n,
           float* out, std::vector<uint8_t>* tmp) {
  tools::GenSpec g;
  g.dist = d;
  g.seed = s.seed;
  g.stream = uint64_t(r);
  tools::Generate(g, off, n, out);
  if (dt != DType::kFloat32) {
    tmp->resize(n * DTypeSize(dt));
    Convert(DType::kFloat32, out, n, dt, tmp->data());
    Convert(dt, tmp->data(), n, DType::kFloat32, out);
  }
}

struct Errors {
  bool checked = false;  // false: the row was not checked (printed "-", recorded null)
  double max_abs = 0, rel_rms = 0;
  uint64_t wrong = 0;     // elements outside the configuration's error bound
  double se = 0, sr = 0;  // sums of squared errors and of squared exact values
};

// Elements [begin, end) of this rank's result (begin a multiple of the block) against the
// exact f64 sum of every rank's input and the error bound of `o` (resolved), chunk by chunk.
Errors Check(const Settings& s, tools::Distribution d, DType dt, int ranks, const AllReduceOptions& o,
             const uint8_t* result, size_t begin, size_t end) {
  Errors e;
  e.checked = true;
  const size_t chunk = (size_t(1) << 20) / o.block * o.block;  // whole blocks: the bound's grid
  std::vector<double> exact(chunk);
  std::vector<std::vector<float>> x(static_cast<size_t>(ranks), std::vector<float>(chunk));
  std::vector<const float*> xp;
  for (const auto& v : x) xp.push_back(v.data());
  std::vector<float> got(chunk);
  std::vector<uint8_t> tmp;
  for (size_t off = begin; off < end; off += chunk) {
    const size_t n = std::min(chunk, end - off);
    std::fill(exact.begin(), exact.begin() + long(n), 0.0);
    for (int r = 0; r < ranks; ++r) {
      Input(s, d, dt, r, off, n, x[size_t(r)].data(), &tmp);
      for (size_t i = 0; i < n; ++i) exact[i] += x[size_t(r)][i];
    }
    Convert(dt, result + off * DTypeSize(dt), n, DType::kFloat32, got.data());
    for (size_t i = 0; i < n; ++i) {
      const double err = double(got[i]) - exact[i];
      e.max_abs = std::max(e.max_abs, std::fabs(err));
      e.se += err * err;
      e.sr += exact[i] * exact[i];
    }
    e.wrong += tools::CountOutsideBound(xp, n, off, o, dt, exact.data(), got.data());
  }
  return e;
}

// The result against the exact sum, every rank checking its own slice of whole blocks (the
// results are bitwise identical, which the caller checks), so that no rank waits long for
// another between collectives (a tool's MPI steps have a deadline: tools/common/job.h).
Errors CheckOnEveryRank(const Settings& s, tools::Distribution d, DType dt, const AllReduceOptions& o,
                        World& w, const uint8_t* result, size_t count) {
  const size_t n = size_t(w.size()), me = size_t(w.rank());
  const size_t blocks = (count + o.block - 1) / o.block;
  const size_t begin = std::min(count, blocks * me / n * o.block);
  const size_t end = std::min(count, blocks * (me + 1) / n * o.block);
  Errors e = Check(s, d, dt, w.size(), o, result, begin, end);
  double sums[3] = {e.se, e.sr, double(e.wrong)};
  w.MaxInPlace(&e.max_abs, 1);
  w.SumInPlace(sums, 3);
  e.wrong = uint64_t(sums[2]);
  e.rel_rms = sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : 0;
  return e;
}

// A measured value, or "-" / null for a row that was not checked.
std::string Cell(const Errors& e, const char* fmt, double v) {
  if (!e.checked) return "-";
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}
std::string JsonNumber(const Errors& e, const char* fmt, double v) {
  return e.checked ? Cell(e, fmt, v) : "null";
}

void Body(const Settings& s, const std::vector<Config>& configs, World& w) {
  const DType dt = *ParseDType(s.dtype);
  const auto dist = *tools::ParseDistribution(s.dist);
  const int n = w.size(), me = w.rank();
  const size_t esize = DTypeSize(dt);
  const size_t max_count = s.max_bytes / esize;
  std::vector<uint8_t> send(max_count * esize), recv(max_count * esize);
  {
    std::vector<float> f(max_count);
    std::vector<uint8_t> tmp;
    Input(s, dist, dt, me, 0, max_count, f.data(), &tmp);
    Convert(DType::kFloat32, f.data(), max_count, dt, send.data());
  }
  FILE* json = nullptr;
  if (me == 0) {
    std::printf("# equarx-perf: %d ranks (%s), dtype %s, data %s, SIMD %s\n", n,
                w.transport().c_str(), s.dtype.c_str(), s.dist.c_str(),
                ActiveSimdTarget().c_str());
    std::printf("# %10s %10s %5s %10s %6s %8s %5s %8s %10s %8s %8s %12s %9s %9s %7s\n", "size",
                "count", "type", "algo", "phases", "codec", "block", "rotation", "time(us)", "algbw",
                "busbw", "wire(B/rank)", "maxabs", "relrms", "#wrong");
    json = tools::OpenJsonLines(s.json, "equarx-perf",
                                "{\"type\":\"header\",\"build\":\"equarx %s\",\"simd_target\":\"%s\","
                                "\"transport\":\"%s\",\"ranks\":%d,\"command\":\"%s\"}\n",
                                EQUARX_VERSION, ActiveSimdTarget().c_str(),
                                w.transport().c_str(), n, s.command.c_str());
  }
  for (size_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= s.factor) {
    const size_t count = bytes / esize;
    double t_normal = 0, t_wire = 0;
    for (const Config& c : configs) {
      const AllReduceOptions& o = c.o;
      const bool mpi = c.algo == "mpi";
      if (mpi && (dt != DType::kFloat32 || w.transport().rfind("mpi", 0) != 0)) {
        if (me == 0) std::printf("# mpi: skipped (needs -d f32 under mpirun)\n");
        break;
      }
      std::vector<double> times(s.iters);
      Status st;
      const uint64_t sent0 = w.comm().stats().bytes_sent;
      for (uint64_t it = 0; it < s.warmup + s.iters; ++it) {
        w.Barrier();
        const auto t0 = std::chrono::steady_clock::now();
        if (mpi) w.MpiAllreduceF32(reinterpret_cast<const float*>(send.data()),
                                   reinterpret_cast<float*>(recv.data()), count);
        else st = w.comm().AllReduce(send.data(), recv.data(), count, dt, o);
        const auto t1 = std::chrono::steady_clock::now();
        if (!st.ok()) break;
        if (it >= s.warmup) times[it - s.warmup] = std::chrono::duration<double>(t1 - t0).count();
      }
      tools::EndJobIfFailed(w.comm());  // before MPI waits on a broken group
      double failed = st.ok() ? 0 : 1;
      w.MaxInPlace(&failed, 1);
      if (failed) {
        if (!st.ok()) std::fprintf(stderr, "rank %d: %s: %s\n", me, c.algo.c_str(), st.ToString().c_str());
        continue;
      }
      const double wire = double(w.comm().stats().bytes_sent - sent0) / double(s.warmup + s.iters);
      w.MaxInPlace(times.data(), times.size());
      uint64_t h = tools::Fnv1a64(recv.data(), count * esize), h0 = h;
      w.BroadcastFromRoot(&h0);
      double differs = h != h0;
      w.SumInPlace(&differs, 1);
      Errors e;
      if (s.check && o.mode == ExecutionMode::kNormal) {
        AllReduceOptions bound = o;
        if (mpi) bound.algorithm = Algorithm::kRing, bound.rotation = Rotation::kNone;  // f32 sums
        bound = tools::ResolveForBound(bound, dt, count, n, w.comm().ranks_per_host());
        e = CheckOnEveryRank(s, dist, dt, bound, w, recv.data(), count);
      }
      if (me != 0) continue;
      const double t = tools::Median(times), p99 = tools::Percentile(times, 0.99);
      if (o.mode == ExecutionMode::kNormal) t_normal = t;
      if (o.mode == ExecutionMode::kWireOnly) t_wire = t;
      if (o.mode == ExecutionMode::kCodecOnly && t_normal > 0)
        std::printf("# overlap %s/%s %zu B: full %.1f us, wire only %.1f us, codec only %.1f us, "
                    "efficiency max(wire,codec)/full = %.1f%%\n",
                    c.algo.c_str(), PhasesName(o.phases).data(), count * esize, t_normal * 1e6,
                    t_wire * 1e6, t * 1e6, 100.0 * std::max(t_wire, t) / t_normal);
      const double algbw = t > 0 ? double(count * esize) / t / 1e9 : 0;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      std::string ph = (c.quantized ? std::string(PhasesName(o.phases)) : "-");
      if (o.mode != ExecutionMode::kNormal) ph += std::string("/") + ModeName(o.mode);
      std::string codec_name = c.quantized ? std::string(CodecName(o.codec)) : "-";
      if (codec_name != "-" && o.rounding == Rounding::kStochastic) codec_name += "/sr";
      const size_t block = c.quantized ? tools::WithCodecDefaults(o).block : 0;
      const std::string rot = mpi ? "-" : std::string(RotationName(o.rotation));
      std::printf("  %10zu %10zu %5s %10s %6s %8s %5zu %8s %10.1f %8.3f %8.3f %12.0f %9s %9s %7s%s\n",
                  count * esize, count, s.dtype.c_str(), c.algo.c_str(), ph.c_str(),
                  codec_name.c_str(), block, rot.c_str(), t * 1e6, algbw, busbw, mpi ? 0.0 : wire,
                  Cell(e, "%.3g", e.max_abs).c_str(), Cell(e, "%.3g", e.rel_rms).c_str(),
                  Cell(e, "%.0f", double(e.wrong)).c_str(),
                  differs && o.mode == ExecutionMode::kNormal ? "  RANKS DIFFER" : "");
      std::fflush(stdout);
      if (json)
        std::fprintf(json,
                     "{\"size_bytes\":%zu,\"count\":%zu,\"dtype\":\"%s\",\"algo\":\"%s\","
                     "\"phases\":\"%s\",\"codec\":\"%s\",\"block\":%zu,\"rotation\":\"%s\",\"ranks\":%d,"
                     "\"time_us\":%.3f,\"time_p99_us\":%.3f,\"algbw_gbs\":%.6f,\"busbw_gbs\":%.6f,\"wire_bytes\":%.0f,"
                     "\"max_abs_err\":%s,\"rel_rms_err\":%s,\"wrong\":%s,"
                     "\"ranks_identical\":%s,\"transport\":\"%s\",\"data\":\"%s\",\"mode\":\"%s\","
                     "\"options\":\"%s\"}\n",
                     count * esize, count, s.dtype.c_str(), c.algo.c_str(), ph.c_str(),
                     codec_name.c_str(), block, rot.c_str(), n, t * 1e6, p99 * 1e6, algbw, busbw,
                     mpi ? 0.0 : wire, JsonNumber(e, "%.6g", e.max_abs).c_str(),
                     JsonNumber(e, "%.6g", e.rel_rms).c_str(), JsonNumber(e, "%.0f", double(e.wrong)).c_str(),
                     differs ? "false" : "true", w.transport().c_str(), s.dist.c_str(),
                     ModeName(o.mode), mpi ? "" : FormatOptions(o).c_str());
    }
  }
  if (json) std::fclose(json);
}

}  // namespace
}  // namespace equarx::perf

int main(int argc, char** argv) {
  using namespace equarx;
  using namespace equarx::perf;
  Settings s;
  for (int i = 0; i < argc; ++i) s.command.append(i ? " " : "").append(argv[i]);
  tools::ArgParser p("equarx-perf", "AllReduce bandwidth and error, nccl-tests style");
  p.AddSize("minbytes", &s.min_bytes, "-b: smallest size in bytes (K/M/G suffixes)");
  p.AddSize("maxbytes", &s.max_bytes, "-e: largest size in bytes");
  p.AddSize("stepfactor", &s.factor, "-f: multiply the size by this each step");
  p.AddUint("iters", &s.iters, "-n: timed iterations per size");
  p.AddUint("warmup_iters", &s.warmup, "-w: untimed warm-up iterations");
  p.AddUint("check", &s.check,
            "-c: 1 = measure error vs the f64 exact sum and count #wrong (outside the error bound), "
            "0 = skip (the row records null)");
  p.AddString("datatype", &s.dtype, "-d: f32, bf16 or f16");
  p.AddString("data", &s.dist, "-D: normal, uniform, heavy or integer");
  p.AddString("json", &s.json, "-J: write one JSON object per row to FILE", "FILE");
  p.AddString("algo", &s.algos,
              "comma-separated: ring, full, full_bidir, semi, two_shot, naive_fp8, auto, mpi");
  tools::OptionFlags flags(&p, /*lists=*/true, {"algorithm", "seed", "mode"});
  p.AddFlag("overlap", &s.overlap,
            "after each quantized row also time its wire-only and codec-only halves and print the "
            "overlap efficiency max(wire, codec) / full");
  p.AddUint("ranks", &s.ranks, "in-process ranks (ignored under mpirun)");
  p.AddUint("seed", &s.seed, "seed of the data and of stochastic rounding");
  for (auto [c, name] : {std::pair{'b', "minbytes"}, {'e', "maxbytes"}, {'f', "stepfactor"},
                         {'n', "iters"}, {'w', "warmup_iters"}, {'c', "check"}, {'d', "datatype"},
                         {'J', "json"}, {'D', "data"}})
    p.AddShort(c, name);
  if (auto rc = p.ParseCommandLine(argc, argv)) return *rc;
  // One configuration per algorithm and combination of the option lists; the algorithms that
  // take no phases or codec (mpi, ring, naive_fp8) only once per distinct rest.
  std::vector<Config> configs;
  std::vector<std::string> seen;
  for (const std::string& a : Split(s.algos)) {
    if (a != "mpi" && !ParseAlgorithm(a)) {
      std::fprintf(stderr, "equarx-perf: unknown algorithm '%s'\n", a.c_str());
      return 2;
    }
    AllReduceOptions base;
    base.seed = s.seed;
    if (a != "mpi") base.algorithm = *ParseAlgorithm(a);
    const bool q = a != "mpi" && TakesCodec(*ParseAlgorithm(a));
    for (AllReduceOptions o : flags.Expand(base)) {
      if (!q) {
        const AllReduceOptions d;
        o.phases = d.phases;
        o.codec = d.codec;
        o.rounding = d.rounding;
        if (a == "mpi") o = base;
      }
      std::string key = a;
      key.append("|").append(FormatOptions(o));
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      if (Status cs = CheckOptions(o); a != "mpi" && !cs.ok()) {
        std::fprintf(stderr, "equarx-perf: %s\n", cs.message().c_str());
        return 2;
      }
      configs.push_back({a, o, q});
      if (s.overlap && q) {
        o.mode = ExecutionMode::kWireOnly;
        configs.push_back({a, o, q});
        o.mode = ExecutionMode::kCodecOnly;
        configs.push_back({a, o, q});
      }
    }
  }
  if (!ParseDType(s.dtype) || !tools::ParseDistribution(s.dist) ||
      s.factor < 2 || s.min_bytes == 0 || s.min_bytes > s.max_bytes || s.iters == 0 ||
      s.ranks < 1 || s.ranks > 4096) {
    std::fprintf(stderr, "equarx-perf: bad dtype, data, sizes, iterations or ranks\n");
    return 2;
  }
  auto body = [&](World& w) { Body(s, configs, w); };
  const Status st = tools::UnderMpirun() ? tools::RunMpi(&argc, &argv, body)
                                          : tools::RunInProcess(int(s.ranks), body);
  if (!st.ok()) {
    std::fprintf(stderr, "equarx-perf: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}
