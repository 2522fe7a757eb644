// mpi_soak — a long randomized run of AllReduce calls under mpirun (docs/reliability.md, "Soak").
//
//   mpirun -np 4 -x EQUARX_DATA_PATH=sockets mpi_soak --calls 20000 --seed 1 [--max-bytes 64M]
//          [--warmup 1000] [--report-every 500] [--check-elems 65536] [--out soak.jsonl] [--start I]
//
// Every call draws, from a PRNG seeded by (seed, call index) and so identical on every rank
// without any communication: a size log-uniform in [1, max-bytes] bytes (count = max(1,
// bytes / dtype size)), the dtype (f32, bf16, f16), the algorithm (every value of the
// library's algorithm table, auto and hierarchical included; hierarchical with ranks_per_host
// in 1..N and any inner algorithm), the codec, phases, block, scale format, rounding,
// rotation (default / none / hadamard), seed, microshards, quantize_min_bytes, f32_partials,
// and in place or not. The inputs are a pure function of (seed, call, rank): one of the tools'
// distributions (normal, uniform, heavy-tailed with outlier channels, integer) scaled by a
// power of two, rounded to the dtype, so finite and exact in it.
//
// Each call is checked on every rank:
//   - rank agreement: a 64-bit hash of the output bytes, gathered from all ranks;
//   - the error bound: the output against the exact f64 sum of every rank's input (each rank
//     regenerates all ranks' inputs) with tools::CountOutsideBound, the tests' oracle
//     (tools/common/error_bound.h), options resolved with tools::ResolveForBound. The tensor
//     is cut into check units of whole blocks, dealt round-robin to the ranks; because the
//     outputs are bitwise identical (the hash), the ranks together check the whole output.
//     Where the units exceed N x --check-elems elements, a deterministic, evenly spread
//     subset of units is checked instead (always including the tensor's last unit); the
//     summary reports how many elements were checked (0 for --check-elems means check all);
//   - a refusal (a status that is not ok) must carry the same code on every rank and be
//     invalid_argument: it is counted as refused, not as a failure; anything else fails.
// Rank 0 prints every failure with what reproduces it (seed, call index, options, count):
// `--seed S --start I --calls 1 --warmup 0` runs call I of seed S alone.
//
// Memory: the buffers are allocated and touched once, at the largest size, before the loop,
// and checking works in fixed-size chunks, so the program's own allocations do not move the
// resident set. Warm-up: first every algorithm x codec x dtype once at the largest size, and
// the options that need the largest scratch (not counted in the totals, but checked the same
// way; see Run), then the first --warmup random calls. RSS (/proc/self/statm resident pages
// x page size) and the allocator's in-use and free bytes (mallinfo2) are sampled at the end
// of warm-up, every --report-every calls and at the end, RSS once more after malloc_trim(0);
// the figure is the largest growth over the ranks of that trimmed RSS (the raw one is
// reported beside it), judged (> 1% fails) only when at least 1000 calls follow the warm-up.
//
// Output: rank 0 prints a line per report interval and, after MPI_Finalize, a final line
//   SOAK calls=… mismatched=… outside_bound=… refused=… rss_warm_kib=… rss_end_kib=… growth_pct=… seconds=…
// (rss figures: the rank with the largest growth) and, with --out, writes one JSON object
// per interval plus a summary object. Exit status: 0 when every check passed, 1 on any
// mismatch, element outside the bound, disagreeing or unexpected refusal, or RSS growth over
// 1% (when judged), 2 on bad arguments. A call that fails the communicator (timeout, lost
// peer) ends the job (tools::EndJobIfFailed). MPI steps between calls have a deadline
// (tools::MpiAllreduce; the per-rank rows are gathered as a bitwise-OR all-reduce).
// The draw, the inputs and the checker of each call are in soak_calls.{h,cc}.
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "equarx/mpi.h"
#include "error_bound.h"
#include "half.h"
#include "job.h"
#include "json_lines.h"
#include "random.h"
#include "soak_calls.h"
#include "stats.h"

namespace equarx::soak {
namespace {

// RSS judged only with at least this many calls after the warm-up.
constexpr uint64_t kMinCallsForRss = 1000;
constexpr double kMaxGrowthPct = 1.0;
// Refused calls printed in full (the rest only counted).
constexpr uint64_t kRefusalsShown = 20;

// Per-rank row gathered after every call: an all-gather as a bitwise-OR all-reduce (every
// rank fills its own row), so that it has a deadline (tools::MpiAllreduce).
enum Field { kCode, kHash, kWrong, kChecked, kRss, kRssTrimmed, kHeapUsed, kHeapFree, kFields };

struct Totals {
  uint64_t calls = 0, mismatched = 0, outside_calls = 0, outside_elems = 0, refused = 0,
           bad_refusals = 0, checked = 0, elements = 0, bytes = 0;
  double input_s = 0, call_s = 0, check_s = 0, gather_s = 0;  // this rank's time in each step
  double slowest_s = 0;  // the slowest AllReduce on this rank, and what it was
  std::string slowest;
};

class Soak {
 public:
  Soak(const Settings& s, Communicator& comm, int me, int n)
      : s_(s), comm_(comm), me_(me), n_(n), checker_(n), rows_(size_t(n) * kFields), bases_(n) {}

  // Returns the exit status; on rank 0 `summary` gets the SOAK line, which main prints after
  // MPI_Finalize.
  int Run(std::string* summary);

 private:
  // Runs one call with draw `d`; updates `t`. Returns whether every check passed.
  bool OneCall(const Draw& d, uint64_t call, const char* phase, Totals* t, bool sample_rss);
  void Report(uint64_t call, const Totals& t, const char* kind);

  const Settings& s_;
  Communicator& comm_;
  int me_, n_;
  Checker checker_;
  std::vector<uint64_t> rows_;
  std::vector<uint8_t> send_, recv_;
  Bases bases_;
  FILE* json_ = nullptr;
  std::chrono::steady_clock::time_point t0_;
  std::vector<uint64_t> rss_warm_;
};

bool Soak::OneCall(const Draw& d, uint64_t call, const char* phase, Totals* t, bool sample_rss) {
  const size_t es = DTypeSize(d.dtype);
  // This rank's input, generated in fixed chunks straight into the buffer it sends.
  using Clock = std::chrono::steady_clock;
  const auto secs = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
  const auto i0 = Clock::now();
  uint8_t* in = d.in_place ? recv_.data() : send_.data();
  bases_.Build(d);
  bases_.Input(d, me_, 0, d.count, nullptr, in);
  t->input_s += secs(i0);
  const auto c0 = Clock::now();
  const Status st = comm_.AllReduce(in, recv_.data(), d.count, d.dtype, d.o);
  const double call_s = secs(c0);
  t->call_s += call_s;
  if (call_s > t->slowest_s) {
    t->slowest_s = call_s;
    t->slowest = Describe(d, call);
  }
  if (!st.ok() && !comm_.failure().ok()) {
    std::fprintf(stderr, "mpi_soak: rank %d: %s %s failed the communicator: %s\n", me_, phase,
                 Describe(d, call).c_str(), st.ToString().c_str());
    std::fflush(stderr);
    tools::EndJobIfFailed(comm_);
  }
  std::fill(rows_.begin(), rows_.end(), 0);
  uint64_t* row = &rows_[size_t(me_) * kFields];
  row[kCode] = uint64_t(st.code());
  const auto k0 = Clock::now();
  if (st.ok()) {
    row[kHash] = tools::Fnv1a64(recv_.data(), d.count * es);
    const AllReduceOptions ob = tools::ResolveForBound(d.o, d.dtype, d.count, n_, comm_.ranks_per_host());
    row[kWrong] = checker_.Check(d, bases_, ob, recv_.data(), me_, s_.check_elems,
                                 s_.seed ^ tools::Mix64(call + 0x5eed), &row[kChecked]);
  }
  if (sample_rss) {
    row[kRss] = ResidentKib();
    // What the allocator holds (glibc, every arena): in use (heap + mmapped chunks) and free
    // but kept. RSS growth with flat in-use memory is memory the allocator keeps, not a leak.
    const struct mallinfo2 mi = mallinfo2();
    row[kHeapUsed] = (mi.uordblks + mi.hblkhd) / 1024;
    row[kHeapFree] = mi.fordblks / 1024;
    // The judged figure: RSS once the allocator has handed its free pages back to the system
    // (malloc_trim), so that the free memory glibc keeps for reuse, which varies by tens of MB
    // from one sample to the next with no trend, does not hide or fake a growth of what is held.
    malloc_trim(0);
    row[kRssTrimmed] = ResidentKib();
  }
  t->check_s += secs(k0);
  const auto g0 = Clock::now();
  tools::MpiAllreduce(MPI_IN_PLACE, rows_.data(), int(rows_.size()), MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD);
  t->gather_s += secs(g0);

  bool ok = true, any_fail = false, all_same = true;
  uint64_t wrong = 0, checked = 0;
  for (int r = 0; r < n_; ++r) {
    const uint64_t* x = &rows_[size_t(r) * kFields];
    any_fail = any_fail || x[kCode] != 0;
    all_same = all_same && x[kCode] == rows_[kCode];
    wrong += x[kWrong];
    checked += x[kChecked];
  }
  ++t->calls;
  t->elements += d.count;
  t->bytes += d.count * es;
  t->checked += checked;
  std::string what;
  if (any_fail) {
    if (all_same && StatusCode(rows_[kCode]) == StatusCode::kInvalidArgument) {
      ++t->refused;
      if (t->refused <= kRefusalsShown && me_ == 0)  // for judging them: what was refused, and why
        std::printf("# refused %s %s: %s\n", phase, Describe(d, call).c_str(), st.ToString().c_str());
    } else {
      ++t->bad_refusals;
      ok = false;
      what = "refusal codes differ or not invalid_argument: codes";
      for (int r = 0; r < n_; ++r)
        what += " " + std::string(StatusCodeName(StatusCode(rows_[size_t(r) * kFields + kCode])));
      what += " (rank " + std::to_string(me_) + ": " + st.ToString() + ")";
    }
  } else {
    bool same = true;
    for (int r = 1; r < n_; ++r) same = same && rows_[size_t(r) * kFields + kHash] == rows_[kHash];
    if (!same) {
      ++t->mismatched;
      ok = false;
      what = "ranks' outputs differ (hashes";
      for (int r = 0; r < n_; ++r) {
        char b[24];
        std::snprintf(b, sizeof b, " %016llx", (unsigned long long)rows_[size_t(r) * kFields + kHash]);
        what += b;
      }
      what += ")";
    }
    if (wrong) {
      ++t->outside_calls;
      t->outside_elems += wrong;
      ok = false;
      what += (what.empty() ? "" : "; ") + std::to_string(wrong) + " of " + std::to_string(checked) +
              " checked elements outside the error bound";
    }
  }
  if (!ok && me_ == 0) {
    std::printf("FAIL %s seed=%llu %s: %s\n", phase, (unsigned long long)s_.seed, Describe(d, call).c_str(),
                what.c_str());
    std::fflush(stdout);
  }
  return ok;
}

void Soak::Report(uint64_t call, const Totals& t, const char* kind) {
  if (me_ != 0) return;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const auto column = [&](Field f) {
    std::string list;
    for (int r = 0; r < n_; ++r) list += (r ? "," : "") + std::to_string(rows_[size_t(r) * kFields + f]);
    return list;
  };
  const std::string list = column(kRss), trimmed = column(kRssTrimmed), used = column(kHeapUsed),
                    kept = column(kHeapFree);
  std::printf("# %s call=%llu calls=%llu mismatched=%llu outside_bound=%llu refused=%llu bad_refusals=%llu "
              "checked=%llu/%llu rss_kib=[%s] rss_trimmed_kib=[%s] heap_used_kib=[%s] heap_free_kib=[%s] "
              "seconds=%.1f\n",
              kind, (unsigned long long)call, (unsigned long long)t.calls, (unsigned long long)t.mismatched,
              (unsigned long long)t.outside_elems, (unsigned long long)t.refused,
              (unsigned long long)t.bad_refusals, (unsigned long long)t.checked,
              (unsigned long long)t.elements, list.c_str(), trimmed.c_str(), used.c_str(), kept.c_str(), secs);
  std::fflush(stdout);
  if (json_) {
    std::fprintf(json_,
                 "{\"type\":\"%s\",\"call\":%llu,\"calls\":%llu,\"mismatched\":%llu,\"outside_bound\":%llu,"
                 "\"outside_bound_calls\":%llu,\"refused\":%llu,\"bad_refusals\":%llu,\"checked_elements\":%llu,"
                 "\"elements\":%llu,\"bytes\":%llu,\"rss_kib\":[%s],\"rss_trimmed_kib\":[%s],\"heap_used_kib\":[%s],\"heap_free_kib\":[%s],"
                 "\"seconds\":%.3f}\n",
                 kind, (unsigned long long)call, (unsigned long long)t.calls, (unsigned long long)t.mismatched,
                 (unsigned long long)t.outside_elems, (unsigned long long)t.outside_calls,
                 (unsigned long long)t.refused, (unsigned long long)t.bad_refusals,
                 (unsigned long long)t.checked, (unsigned long long)t.elements, (unsigned long long)t.bytes,
                 list.c_str(), trimmed.c_str(), used.c_str(), kept.c_str(), secs);
    std::fflush(json_);
  }
}

int Soak::Run(std::string* summary) {
  t0_ = std::chrono::steady_clock::now();
  // The big buffers once, at the largest size, touched so that they are resident from here on.
  send_.assign(s_.max_bytes, 0);
  recv_.assign(s_.max_bytes, 0);
  if (me_ == 0) {
    std::printf("# mpi_soak: %d ranks, %llu calls (warm-up %llu), seed %llu, sizes 1..%zu bytes, check "
                "budget %zu elements per rank per call (0 = all), data path %s\n# command: %s\n",
                n_, (unsigned long long)s_.calls, (unsigned long long)s_.warmup, (unsigned long long)s_.seed,
                s_.max_bytes, s_.check_elems, std::getenv("EQUARX_DATA_PATH") ? std::getenv("EQUARX_DATA_PATH") : "mpi",
                s_.command.c_str());
    std::fflush(stdout);
    json_ = tools::OpenJsonLines(
        s_.out, "mpi_soak",
        "{\"type\":\"header\",\"build\":\"equarx %s\",\"ranks\":%d,\"calls\":%llu,\"warmup\":%llu,"
        "\"seed\":%llu,\"max_bytes\":%zu,\"check_elems\":%zu,\"command\":\"%s\"}\n",
        EQUARX_VERSION, n_, (unsigned long long)s_.calls, (unsigned long long)s_.warmup,
        (unsigned long long)s_.seed, s_.max_bytes, s_.check_elems, s_.command.c_str());
  }
  bool ok = true;
  // Warm-up, phase 1, at the largest size: every algorithm x codec x dtype (phases rs+ag), and
  // the options that make the communicator's grow-only scratch largest (src/algo/executor.cc,
  // two_shot.cc, hierarchical.cc): block 16 with f32 scales (the most wire bytes), phases rs
  // and ag with f32 partial sums (an unquantized f32 hop), one microshard (the rotation's
  // temporaries are a microshard each), the rotation where it applies, hierarchical with every
  // ranks_per_host. Without the second part the scratch kept growing for thousands of random
  // calls after the warm-up (the soak at 972a74f, docs/reliability.md).
  Totals pre;
  if (s_.start == 0) {
    size_t na = 0, nc = 0;
    const EnumInfo* algos = AlgorithmTable(&na);
    const EnumInfo* codecs = CodecTable(&nc);
    uint64_t k = 0;
    const auto run = [&](DType dt, const AllReduceOptions& o) {
      Draw d;
      d.dtype = dt;
      d.count = std::max<size_t>(1, s_.max_bytes / DTypeSize(dt));
      d.o = o;
      d.gen.seed = s_.seed + k;
      ok = OneCall(d, k++, "warm-up", &pre, false) && ok;
    };
    for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
      for (size_t a = 0; a < na; ++a) {
        AllReduceOptions o;
        o.algorithm = Algorithm(algos[a].id);
        o.block = kMinBlock;
        const bool hier = o.algorithm == Algorithm::kHierarchical;
        if (hier) o.ranks_per_host = uint32_t(std::max(1, n_ / 2));
        for (size_t c = 0; c < nc && (c == 0 || TakesCodec(o.algorithm)); ++c) {
          o.codec = Codec(codecs[c].id);
          run(dt, o);
        }
        o.codec = Codec::kInt8;
        o.f32_partials = true;
        o.microshards = 1;
        for (uint32_t rph = 1; rph <= uint32_t(hier ? n_ : 1); ++rph)
          for (Phases ph : {Phases::kRS, Phases::kAG, Phases::kRSAG}) {
            if (hier) o.ranks_per_host = rph;
            o.phases = ph;
            run(dt, o);
            if (!TakesCodec(o.algorithm)) break;
          }
      }
  }
  // Then the random calls; the first s_.warmup of them are the rest of the warm-up.
  Totals t;
  std::vector<uint64_t> rss_warm, raw_warm;
  for (uint64_t i = 0; i < s_.calls; ++i) {
    const uint64_t call = s_.start + i;
    const bool warm_end = i + 1 == s_.warmup;
    const bool report = (s_.report_every && (i + 1) % s_.report_every == 0) || i + 1 == s_.calls;
    ok = OneCall(DrawCall(s_, call, n_), call, "soak", &t, report || warm_end) && ok;
    if (warm_end) {
      for (int r = 0; r < n_; ++r) {
        rss_warm.push_back(rows_[size_t(r) * kFields + kRssTrimmed]);
        raw_warm.push_back(rows_[size_t(r) * kFields + kRss]);
      }
      Report(call, t, "warmup_end");
    }
    if (report) Report(call, t, "interval");
  }
  if (s_.warmup == 0 || s_.warmup > s_.calls) rss_warm.clear(), raw_warm.clear();
  std::vector<uint64_t> rss_end(static_cast<size_t>(n_)), raw_end(static_cast<size_t>(n_));
  for (int r = 0; r < n_; ++r) {
    rss_end[size_t(r)] = rows_[size_t(r) * kFields + kRssTrimmed];
    raw_end[size_t(r)] = rows_[size_t(r) * kFields + kRss];
  }
  // The figure: the rank with the largest growth from the end of warm-up to the end.
  const auto largest_growth = [&](const std::vector<uint64_t>& w, const std::vector<uint64_t>& e, int* worst) {
    double growth = 0;
    for (size_t r = 0; r < w.size(); ++r) {
      const double g = 100.0 * (double(e[r]) - double(w[r])) / double(std::max<uint64_t>(1, w[r]));
      if (r == 0 || g > growth) growth = g, *worst = int(r);
    }
    return growth;
  };
  int worst = 0, raw_worst = 0;
  const double growth = largest_growth(rss_warm, rss_end, &worst);
  const double raw_growth = largest_growth(raw_warm, raw_end, &raw_worst);
  const uint64_t after = s_.calls > s_.warmup ? s_.calls - s_.warmup : 0;
  const bool judged = !rss_warm.empty() && after >= kMinCallsForRss && s_.start == 0;
  const bool rss_ok = !judged || growth <= kMaxGrowthPct;
  ok = ok && rss_ok;
  double all_ok = ok ? 0 : 1;
  tools::MpiAllreduce(MPI_IN_PLACE, &all_ok, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  if (me_ == 0) {
    const uint64_t warm_kib = rss_warm.empty() ? 0 : rss_warm[size_t(worst)];
    std::printf("# warm-up phase 1: %llu calls at %zu bytes, mismatched=%llu outside_bound=%llu refused=%llu "
                "bad_refusals=%llu\n",
                (unsigned long long)pre.calls, s_.max_bytes, (unsigned long long)pre.mismatched,
                (unsigned long long)pre.outside_elems, (unsigned long long)pre.refused,
                (unsigned long long)pre.bad_refusals);
    for (const Totals* x : {&pre, &t})
      std::printf("# rank 0's time in %s: inputs %.1f s, AllReduce %.1f s, checks %.1f s, waiting for the others' "
                  "rows %.1f s\n", x == &pre ? "warm-up phase 1" : "the soak", x->input_s, x->call_s, x->check_s,
                  x->gather_s);
    std::printf("# slowest call on rank 0: %.3f s in warm-up phase 1 (%s), %.3f s in the soak (%s)\n",
                pre.slowest_s, pre.slowest.c_str(), t.slowest_s, t.slowest.c_str());
    std::printf("# checked %llu of %llu output elements (%.2f%%)%s; RSS %s (%llu calls after warm-up, "
                "judged from %llu); worst rank %d\n",
                (unsigned long long)t.checked, (unsigned long long)t.elements,
                t.elements ? 100.0 * double(t.checked) / double(t.elements) : 0.0,
                s_.check_elems ? ", a deterministic subset of blocks in the largest calls" : "",
                judged ? (rss_ok ? "judged: within 1%" : "judged: GROWTH OVER 1%") : "not judged",
                (unsigned long long)after, (unsigned long long)kMinCallsForRss, worst);
    char line[512];
    std::snprintf(line, sizeof line,
                  "SOAK calls=%llu mismatched=%llu outside_bound=%llu refused=%llu bad_refusals=%llu "
                  "rss_warm_kib=%llu rss_end_kib=%llu growth_pct=%.3f raw_rss_growth_pct=%.3f seconds=%.1f result=%s",
                  (unsigned long long)t.calls, (unsigned long long)t.mismatched,
                  (unsigned long long)t.outside_elems, (unsigned long long)t.refused,
                  (unsigned long long)t.bad_refusals, (unsigned long long)warm_kib,
                  (unsigned long long)rss_end[size_t(worst)], growth, raw_growth, secs, all_ok ? "FAIL" : "PASS");
    *summary = line;
    if (json_) {
      std::string warm, end, rwarm, rend;
      for (int r = 0; r < n_; ++r) {
        warm += (r ? "," : "") + std::to_string(rss_warm.empty() ? 0 : rss_warm[size_t(r)]);
        end += (r ? "," : "") + std::to_string(rss_end[size_t(r)]);
        rwarm += (r ? "," : "") + std::to_string(raw_warm.empty() ? 0 : raw_warm[size_t(r)]);
        rend += (r ? "," : "") + std::to_string(raw_end[size_t(r)]);
      }
      std::fprintf(json_,
                   "{\"type\":\"summary\",\"calls\":%llu,\"mismatched\":%llu,\"outside_bound\":%llu,"
                   "\"outside_bound_calls\":%llu,\"refused\":%llu,\"bad_refusals\":%llu,\"checked_elements\":%llu,"
                   "\"elements\":%llu,\"bytes\":%llu,\"warmup_phase1_calls\":%llu,\"warmup_phase1_failures\":%llu,"
                   "\"rss_warm_kib\":[%s],\"rss_end_kib\":[%s],\"growth_pct\":%.4f,\"worst_rank\":%d,"
                   "\"raw_rss_warm_kib\":[%s],\"raw_rss_end_kib\":[%s],\"raw_growth_pct\":%.4f,\"raw_worst_rank\":%d,"
                   "\"rss_judged\":%s,\"seconds\":%.3f,\"pass\":%s}\n",
                   (unsigned long long)t.calls, (unsigned long long)t.mismatched,
                   (unsigned long long)t.outside_elems, (unsigned long long)t.outside_calls,
                   (unsigned long long)t.refused, (unsigned long long)t.bad_refusals,
                   (unsigned long long)t.checked, (unsigned long long)t.elements, (unsigned long long)t.bytes,
                   (unsigned long long)pre.calls,
                   (unsigned long long)(pre.mismatched + pre.outside_calls + pre.bad_refusals), warm.c_str(),
                   end.c_str(), growth, worst, rwarm.c_str(), rend.c_str(), raw_growth, raw_worst,
                   judged ? "true" : "false", secs, all_ok ? "false" : "true");
      std::fclose(json_);
    }
  }
  return all_ok ? 1 : 0;
}

}  // namespace
}  // namespace equarx::soak

int main(int argc, char** argv) {
  using namespace equarx;
  soak::Settings s;
  for (int i = 0; i < argc; ++i) s.command.append(i ? " " : "").append(argv[i]);
  tools::ArgParser p("mpi_soak", "randomized AllReduce soak under mpirun: agreement, error bound, RSS");
  p.AddUint("calls", &s.calls, "random calls (the first --warmup of them warm up)");
  p.AddUint("seed", &s.seed, "seed of every draw and input");
  p.AddUint("start", &s.start,
            "index of the first random call (a call's draw and inputs depend only on the seed and its "
            "index, so --start I --calls 1 reproduces call I); > 0 skips warm-up phase 1 and the RSS verdict",
            "I");
  p.AddSize("max-bytes", &s.max_bytes, "largest call in bytes (K/M/G suffixes; default 64M)");
  p.AddUint("warmup", &s.warmup, "random calls before the RSS baseline (default 1000)");
  p.AddUint("report-every", &s.report_every, "a report line (and RSS sample) every K calls; 0 = only at the end",
            "K");
  p.AddSize("check-elems", &s.check_elems,
            "elements each rank checks per call at most (a spread subset of whole blocks beyond); 0 = all");
  p.AddString("out", &s.out, "write one JSON object per report interval and a summary to FILE", "FILE");
  // Every rank parses the flags (the same verdict everywhere); rank 0 prints the message.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Status st = p.Parse(argc, argv);
  std::string bad;
  if (!st.ok()) bad = st.message();
  else if (!p.positional().empty()) bad = "unexpected argument '" + p.positional()[0] + "'";
  else if (s.calls == 0) bad = "--calls must be at least 1";
  else if (s.max_bytes == 0) bad = "--max-bytes must be at least 1";
  else if (s.max_bytes > (size_t(1) << 30)) bad = "--max-bytes must be at most 1G";
  else if (s.warmup >= s.calls) bad = "--warmup must be smaller than --calls";
  else if (s.start > UINT64_MAX - s.calls) bad = "--start plus --calls overflows";
  else if (n < 2) bad = "needs at least 2 ranks (run it under mpirun -np N)";
  if (p.help_requested()) {
    if (me == 0) std::printf("%s", p.Help().c_str());
    MPI_Finalize();
    return 0;
  }
  if (!bad.empty()) {
    if (me == 0) std::fprintf(stderr, "mpi_soak: %s\n%s", bad.c_str(), p.Help().c_str());
    MPI_Finalize();
    return 2;
  }
  std::unique_ptr<Communicator> comm;
  st = CreateMpiCommunicator(MPI_COMM_WORLD, &comm);
  if (!st.ok()) {
    std::fprintf(stderr, "mpi_soak: rank %d: CreateMpiCommunicator: %s\n", me, st.ToString().c_str());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  std::string summary;
  const int rc = soak::Soak(s, *comm, me, n).Run(&summary);
  comm.reset();
  MPI_Finalize();
  // The verdict line comes after the teardown: a crash in it cannot follow a PASS (CTest's
  // mpi_soak_sockets_np4 needs this line and exit status 0).
  if (me == 0) std::printf("%s\n", summary.c_str());
  return rc;
}
