// gloo-bench: Gloo's allreduce timed in the conventions of equarx-perf, so that the netem
// harness (bench/netem/run.sh) can put Gloo's rows next to ours in one table.
//
//   gloo-bench -b 1M -e 64M -f 2 -n 10 -w 3 --store DIR [--iface eqx0] [--algo ring|bcube]
//              [-J rows.jsonl]
//
// Rank and size come from the launcher's environment (OMPI_COMM_WORLD_RANK/SIZE under mpirun,
// which is used as a process launcher only; this program does not link MPI) or from --rank and
// --size. Rendezvous is Gloo's FileStore in DIR, which must be fresh and shared by all ranks
// (all network namespaces of the harness share one file system). Transport: Gloo TCP, bound
// to --iface (the namespace's veth) or --host.
//
// Data: f32, integer-valued (x = (i + 3r) mod 17 - 8 on rank r), so the sum is exact and every
// element is checked (#wrong). Timing per size: for each iteration a barrier (the new-style
// gloo::barrier; NETEM.md: do not mix the old-style Barrier algorithm objects with
// gloo::allreduce on one context), then one allreduce; the slowest rank's time per iteration
// (a max-allreduce at the end), and the median and p99 over iterations. busbw = algbw * 2(N-1)/N on
// the logical f32 bytes, as nccl-tests and equarx-perf.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Settings {
  size_t min_bytes = 1 << 20, max_bytes = 1 << 20, factor = 2, iters = 10, warmup = 3;
  int rank = -1, size = -1;
  std::string store, iface, host, algo = "ring", json, command;
  int timeout_s = 600;
};

bool ParseSize(const char* s, size_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  double m = 1;
  switch (*end) {
    case 'K': case 'k': m = 1024.0; ++end; break;
    case 'M': case 'm': m = 1024.0 * 1024; ++end; break;
    case 'G': case 'g': m = 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = size_t(v * m);
  return true;
}

int EnvInt(const char* a, const char* b) {
  const char* v = std::getenv(a);
  if (!v && b) v = std::getenv(b);
  return v ? std::atoi(v) : -1;
}

void Usage() {
  std::fprintf(stderr,
               "usage: gloo-bench -b MIN -e MAX [-f FACTOR] [-n ITERS] [-w WARMUP] --store DIR\n"
               "                  [--iface IF | --host ADDR] [--algo ring|bcube] [-J FILE]\n"
               "                  [--rank R --size N] [--timeout S]\n");
}

bool Parse(int argc, char** argv, Settings* s) {
  for (int i = 0; i < argc; ++i) s->command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") return false;
    if (!(v = next())) return false;
    if (a == "-b" || a == "--minbytes") { if (!ParseSize(v, &s->min_bytes)) return false; }
    else if (a == "-e" || a == "--maxbytes") { if (!ParseSize(v, &s->max_bytes)) return false; }
    else if (a == "-f" || a == "--stepfactor") s->factor = std::strtoul(v, nullptr, 10);
    else if (a == "-n" || a == "--iters") s->iters = std::strtoul(v, nullptr, 10);
    else if (a == "-w" || a == "--warmup_iters") s->warmup = std::strtoul(v, nullptr, 10);
    else if (a == "-J" || a == "--json") s->json = v;
    else if (a == "--store") s->store = v;
    else if (a == "--iface") s->iface = v;
    else if (a == "--host") s->host = v;
    else if (a == "--algo") s->algo = v;
    else if (a == "--rank") s->rank = std::atoi(v);
    else if (a == "--size") s->size = std::atoi(v);
    else if (a == "--timeout") s->timeout_s = std::atoi(v);
    else return false;
  }
  if (s->rank < 0) s->rank = EnvInt("OMPI_COMM_WORLD_RANK", "PMI_RANK");
  if (s->size < 0) s->size = EnvInt("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
  return s->rank >= 0 && s->size > 0 && s->rank < s->size && !s->store.empty() &&
         s->factor >= 2 && s->iters > 0 && s->min_bytes >= 4 && s->min_bytes <= s->max_bytes &&
         (s->algo == "ring" || s->algo == "bcube");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The q-quantile by nearest rank (equarx-perf's, tools/common/stats.h).
double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t rank = std::clamp<size_t>(size_t(std::ceil(q * double(v.size()))), 1, v.size());
  return v[rank - 1];
}

float Value(size_t i, int r) { return float(int((i + 3 * size_t(r)) % 17) - 8); }

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  if (!Parse(argc, argv, &s)) {
    Usage();
    return 2;
  }
  const int n = s.size, me = s.rank;
  const auto timeout = std::chrono::seconds(s.timeout_s);

  gloo::transport::tcp::attr attr;
  if (!s.iface.empty()) attr.iface = s.iface;
  if (!s.host.empty()) attr.hostname = s.host;
  attr.ai_family = AF_INET;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fstore(s.store);
  gloo::rendezvous::PrefixStore store("gloo-bench", fstore);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(me, n);
  ctx->setTimeout(timeout);
  ctx->connectFullMesh(store, dev);
  std::shared_ptr<gloo::Context> c = ctx;

  uint32_t tag = 1;
  auto barrier = [&] {
    gloo::BarrierOptions o(c);
    o.setTag(tag++);
    o.setTimeout(timeout);
    gloo::barrier(o);
  };

  const size_t max_count = s.max_bytes / sizeof(float);
  std::vector<float> in(max_count), out(max_count);
  for (size_t i = 0; i < max_count; ++i) in[i] = Value(i, me);

  FILE* json = nullptr;
  if (me == 0) {
    std::printf("# gloo-bench: %d ranks (gloo tcp%s%s), dtype f32, data integer, algo %s\n", n,
                s.iface.empty() ? "" : ", iface ", s.iface.c_str(), s.algo.c_str());
    std::printf("# %10s %10s %5s %10s %10s %8s %8s %7s\n", "size", "count", "type", "algo",
                "time(us)", "algbw", "busbw", "#wrong");
    if (!s.json.empty() && !(json = std::fopen(s.json.c_str(), "w")))
      std::fprintf(stderr, "gloo-bench: cannot write %s\n", s.json.c_str());
    if (json)
      std::fprintf(json,
                   "{\"type\":\"header\",\"build\":\"gloo (libgloo 0.0~git20220518)\","
                   "\"simd_target\":\"-\",\"transport\":\"gloo-tcp\",\"ranks\":%d,"
                   "\"command\":\"%s\"}\n",
                   n, s.command.c_str());
  }
  const std::string algo_name = "gloo_" + s.algo;
  for (size_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= s.factor) {
    const size_t count = bytes / sizeof(float);
    std::vector<double> times(s.iters);
    for (size_t it = 0; it < s.warmup + s.iters; ++it) {
      gloo::AllreduceOptions o(c);
      o.setAlgorithm(s.algo == "ring" ? gloo::AllreduceOptions::Algorithm::RING
                                      : gloo::AllreduceOptions::Algorithm::BCUBE);
      o.setInput(in.data(), count);
      o.setOutput(out.data(), count);
      o.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      o.setTag(tag++);
      o.setTimeout(timeout);
      barrier();
      const auto t0 = std::chrono::steady_clock::now();
      gloo::allreduce(o);
      const auto t1 = std::chrono::steady_clock::now();
      if (it >= s.warmup) times[it - s.warmup] = std::chrono::duration<double>(t1 - t0).count();
    }
    // #wrong on this rank, then the slowest rank's time per iteration.
    double wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float e = 0;
      for (int r = 0; r < n; ++r) e += Value(i, r);
      wrong += out[i] != e;
    }
    times.push_back(wrong);
    {
      gloo::AllreduceOptions o(c);
      o.setOutput(times.data(), times.size());
      o.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
      o.setTag(tag++);
      o.setTimeout(timeout);
      gloo::allreduce(o);
    }
    wrong = times.back();
    times.pop_back();
    if (me != 0) continue;
    const double t = Median(times), p99 = Percentile(times, 0.99);
    const double algbw = double(bytes) / t / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
    // Ring: each rank sends 2(N-1)/N of the buffer; bcube differs, report the ring figure only.
    const double wire = s.algo == "ring" ? 2.0 * (n - 1) / n * double(count * sizeof(float)) : 0;
    std::printf("  %10zu %10zu %5s %10s %10.1f %8.3f %8.3f %7.0f\n", count * sizeof(float), count,
                "f32", algo_name.c_str(), t * 1e6, algbw, busbw, wrong);
    std::fflush(stdout);
    if (json) {
      std::fprintf(json,
                   "{\"size_bytes\":%zu,\"count\":%zu,\"dtype\":\"f32\",\"algo\":\"%s\","
                   "\"phases\":\"-\",\"codec\":\"-\",\"block\":0,\"ranks\":%d,"
                   "\"time_us\":%.3f,\"time_p99_us\":%.3f,\"algbw_gbs\":%.6f,\"busbw_gbs\":%.6f,\"wire_bytes\":%.0f,"
                   "\"max_abs_err\":0,\"rel_rms_err\":0,\"wrong\":%.0f,"
                   "\"ranks_identical\":true,\"transport\":\"gloo-tcp\",\"data\":\"integer\","
                   "\"mode\":\"normal\"}\n",
                   count * sizeof(float), count, algo_name.c_str(), n, t * 1e6, p99 * 1e6, algbw, busbw,
                   wire, wrong);
      std::fflush(json);
    }
  }
  barrier();
  if (json) std::fclose(json);
  return 0;
}
