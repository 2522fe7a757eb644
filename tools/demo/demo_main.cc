// equarx-demo — a short tour of the quantized AllReduce (about 30 s at the defaults).
//
// 8 ranks (threads of this process, every byte through the in-process transport) each hold a
// few MiB of bf16 N(0,1) values. For the unquantized bf16 ring and every EQuARX configuration
// (full / full_bidir / semi x rs / ag / rs+ag, int8, and the naive fp8 cast) it prints the wire
// bytes per rank, the median time over a few iterations, the MSE and relative RMS error
// against bf16(exact f64 sum), and ratios to the ring baseline; it checks that every rank's
// result is bitwise identical on every iteration (exit 1 otherwise).
// Note: ranks here share one machine's memory bandwidth and cores, so times show codec cost,
// not the link-bandwidth win; wire bytes show what a bandwidth-bound network would carry.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "equarx/options.h"
#include "equarx/types.h"
#include "experiment.h"

namespace equarx::tools {
namespace {

struct Row {
  Algorithm algo;
  Phases phases;
};

std::string Label(const Row& r) {
  if (r.algo == Algorithm::kRing) return "ring (bf16)";
  if (r.algo == Algorithm::kNaiveFp8) return "naive_fp8";
  return std::string(AlgorithmName(r.algo)) + " " + std::string(PhasesName(r.phases));
}

int Main(int argc, char** argv) {
  uint64_t ranks = 8, iters = 5, seed = 1;
  size_t size = size_t(2) << 20, block = 0;
  ArgParser p("equarx-demo", "[options]");
  std::string rotation_s = "default", scale_s = "default";
  p.AddString("rotation", &rotation_s,
              "rotation of the quantized rows: default (the codec's: hadamard for int8), none, hadamard", "R");
  p.AddUint("ranks", &ranks, "ranks (threads), default 8");
  p.AddSize("size", &size, "bf16 elements per rank, default 2M (4 MiB)");
  p.AddSize("block", &block, "int8 scale block, default 0: the library's (128 with two_level scales, else 64)", "B");
  p.AddString("scale", &scale_s, "scale format of the quantized rows: default (the codec's: two_level for int8), f32, bf16, two_level", "S");
  p.AddUint("iters", &iters, "timed iterations per configuration (median), default 5");
  p.AddUint("seed", &seed, "data seed, default 1");
  if (auto rc = p.ParseCommandLine(argc, argv)) return *rc;
  const std::optional<Rotation> rotation = ParseRotation(rotation_s);
  if (!rotation) {
    std::fprintf(stderr, "equarx-demo: unknown rotation '%s' (default, none, hadamard)\n", rotation_s.c_str());
    return 2;
  }
  const std::optional<ScaleFormat> scale = ParseScaleFormat(scale_s);
  if (!scale) {
    std::fprintf(stderr, "equarx-demo: unknown scale '%s' (default, f32, bf16, two_level)\n", scale_s.c_str());
    return 2;
  }
  if (ranks < 1 || ranks > 256 || iters < 1 || iters > 1000 || (block != 0 && (block < kMinBlock || block > kMaxBlock))) {
    std::fprintf(stderr, "equarx-demo: bad arguments (ranks 1..256, iters 1..1000, block 0 or %zu..%zu)\n",
                 kMinBlock, kMaxBlock);
    return 2;
  }
  // The quantized rows' codec as the library resolves it (int8's default scale and block).
  const AllReduceOptions codec = ResolveOptions(AllReduceOptions{.block = block, .scale = *scale});
  if (Status st = CheckOptions(codec); !st.ok()) {
    std::fprintf(stderr, "equarx-demo: %s\n", st.message().c_str());
    return 2;
  }

  std::printf("equarx demo: %llu ranks x %zu bf16 N(0,1) values (%s per rank), int8 block %zu, "
              "%s scales, rotation %s, median of %llu iterations\n",
              static_cast<unsigned long long>(ranks), size, FormatBytes(double(size) * 2).c_str(), codec.block,
              ScaleFormatName(codec.scale).data(), rotation_s.c_str(), static_cast<unsigned long long>(iters));
  std::printf("error vs bf16(exact f64 sum of the bf16 inputs); ratios vs the bf16 ring\n\n");
  std::unique_ptr<Bf16Experiment> e;
  GenSpec g;
  g.seed = seed;
  if (Status s = Bf16Experiment::Create(int(ranks), size, g, &e); !s.ok()) {
    std::fprintf(stderr, "equarx-demo: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<Row> rows = {{Algorithm::kRing, Phases::kRSAG}};
  for (Algorithm a : {Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi})
    for (Phases ph : {Phases::kRS, Phases::kAG, Phases::kRSAG}) rows.push_back({a, ph});
  rows.push_back({Algorithm::kNaiveFp8, Phases::kRSAG});

  std::printf("%-16s %12s %8s %10s %8s %11s %11s %9s %6s\n", "configuration", "wire B/rank", "bytes÷",
              "median ms", "speedup", "MSE", "rel RMS", "MSE/ring", "agree");
  double ring_bytes = 0, ring_ms = 0, ring_mse = 0;
  bool ok = true;
  for (const Row& row : rows) {
    AllReduceOptions opt;
    opt.algorithm = row.algo;
    opt.phases = row.phases;
    opt.block = codec.block;
    opt.scale = codec.scale;
    if (TakesCodec(row.algo)) opt.rotation = *rotation;  // (the ring and naive_fp8 never rotate here)
    RunResult first;
    std::vector<double> times;
    bool agree = true;
    Status st;
    for (uint64_t it = 0; it <= iters && st.ok(); ++it) {  // iteration 0 warms up (scratch, pages)
      RunResult r;
      st = e->Run(opt, &r, it == 0);
      if (!st.ok()) break;
      if (r.first_bad_rank >= 0) agree = false;
      if (it == 0) first = r;
      else times.push_back(r.call.seconds * 1e3);
    }
    if (!st.ok()) {
      std::printf("%-16s error: %s\n", Label(row).c_str(), st.ToString().c_str());
      ok = false;
      continue;
    }
    std::sort(times.begin(), times.end());
    const double ms = times[times.size() / 2];
    const double bytes = first.call.mean_bytes_per_rank();
    if (row.algo == Algorithm::kRing) {
      ring_bytes = bytes;
      ring_ms = ms;
      ring_mse = first.err.mse;
    }
    ok = ok && agree;
    const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    std::printf("%-16s %12.0f %7.2fx %10.2f %7.2fx %11.3e %11.3e %9.1f %6s\n", Label(row).c_str(), bytes,
                ratio(ring_bytes, bytes), ms, ratio(ring_ms, ms), first.err.mse, first.err.rel_rms,
                ratio(first.err.mse, ring_mse), agree ? "yes" : "NO");
  }
  std::printf("\n%s\n", ok ? "all ranks bitwise identical in every configuration"
                           : "FAILED: some configuration errored or ranks disagreed");
  std::printf("(times are in-process on shared cores: they show codec cost; wire bytes show what a\n"
              " bandwidth-bound link carries, where the byte ratio approaches the speedup)\n");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace equarx::tools

int main(int argc, char** argv) { return equarx::tools::Main(argc, argv); }
