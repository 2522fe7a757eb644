// equarx cost model (see cost_model.h for the model itself).
#include "algo/cost_model.h"

#include <algorithm>
#include <limits>

#include "algo/hierarchical.h"
#include "algo/one_shot.h"
#include "algo/resolve.h"

namespace equarx::algo {
namespace {

bool Quantized(const codec::WireSpec& w) { return w.format >= codec::Format::kInt8Block; }

int PhaseSteps(const Lane* lanes, int n) {
  int steps = 0;
  for (int i = 0; i < n; ++i) steps = std::max(steps, lanes[i].steps);
  return steps;
}

int LaneMessages(const Lane* lanes, int n) {
  int messages = 0;
  for (int i = 0; i < n; ++i) messages += lanes[i].steps;
  return messages;
}

// The cores of its host each rank has (unbounded where cores_per_host is 0: no contention).
double CoresPerRank(const Machine& m) {
  if (m.cores_per_host <= 0) return std::numeric_limits<double>::infinity();
  return m.cores_per_host / std::max(1, m.ranks_per_host);
}

// The share of a core each rank has for its own copies (1 where cores are not scarce):
// intra-host copies are a CPU's loads and stores, at shm_bytes_per_s per core.
double CoreShare(const Machine& m) { return std::min(1.0, CoresPerRank(m)); }

// The argument check with validate on (core/validate.h), for a call of `plan` on N ranks, R per
// host. N a power of two across hosts (ChecksByTree): log2 N steps, each a frame to one
// partner (rank ^ 2^k); recursive_doubling's data rides in those frames' messages, and each
// frame leaves with one_shot's data to that step's partner (the call waits for the last step:
// log2 N - 1 more steps, no more messages). Otherwise one all-to-all step of descriptors, in
// which one_shot's data rides.
struct Check {
  int steps = 0;
  uint64_t messages = 0, bytes = 0, host_egress_bytes = 0, intra_host_bytes = 0;
};
Check CheckOf(int N, int R, const Machine& m, const Plan& plan) {
  Check c;
  if (ChecksByTree(N, R)) {
    const int K = Log2(N), off_host = K - std::min(K, Log2(R));  // steps whose partner is on another host
    c.steps = plan.recursive_doubling ? 0 : plan.one_shot ? K - 1 : K;
    c.messages = plan.one_shot ? 0 : uint64_t(K);
    c.bytes = uint64_t(K) * kCheckFrameBytes;
    c.host_egress_bytes = uint64_t(R) * uint64_t(off_host) * kCheckFrameBytes;
    c.intra_host_bytes = uint64_t(K - off_host) * kCheckFrameBytes;
    return c;
  }
  c.steps = plan.one_shot ? 0 : 1;
  c.messages = plan.one_shot ? 0 : uint64_t(N - 1);
  c.bytes = uint64_t(N - 1) * m.check_bytes;
  c.host_egress_bytes = uint64_t(R) * (N - R) * m.check_bytes;
  c.intra_host_bytes = uint64_t(R - 1) * m.check_bytes;
  return c;
}

}  // namespace

double EffectiveThreads(const Machine& m) {
  return std::min(double(std::max(1, m.threads)), CoresPerRank(m));
}

namespace {
const env::Settings& EnvOf(const Machine& m) {
  static const env::Settings kBuiltIn;
  return m.env ? *m.env : kBuiltIn;
}
}  // namespace

Prediction PredictFlat(const AllReduceOptions& options, DType dtype, size_t count,
                       const Machine& m, const TuneTable& table) {
  Prediction p;
  const int R = std::max(1, m.ranks_per_host);
  const int N = std::max(1, m.hosts) * R;
  if (N < 2 || count == 0) return p;
  Resolved r;
  if (!Resolve({options, dtype, count, N}, EnvOf(m), table, &r).ok()) return p;  // refused: no time
  if (r.hierarchical) {
    AllReduceOptions inner = options;
    inner.algorithm = options.inner;
    return PredictHierarchical(inner, dtype, count, m, table);
  }
  const Plan& plan = r.plan;
  p.algorithm = plan.algorithm;
  // Pieces per message: the executor's microshards; one_shot sends each contribution whole.
  const size_t micro = plan.one_shot ? 1 : PlanMicroshards(plan, N, r.options.microshards);
  const uint64_t W = PlanWireBytes(plan, 0, N, micro);
  p.wire_bytes_per_rank = W;

  uint64_t messages;
  if (plan.recursive_doubling) {
    // Rank 0's steps and messages (recursive_doubling.cc); a host sends what its ranks send to
    // partners on other hosts.
    const int P = PowerOfTwoBelow(N);
    p.steps = Log2(P) + (N > P ? 2 : 0);
    messages = uint64_t(Log2(P) + (N > P ? 1 : 0));
    const uint64_t S = OneShotWireBytes(plan, N, kScratchFloor, 1);
    for (int q = 0; q < std::min(R, N); ++q) {  // the ranks of host 0
      auto to = [&](int peer) {
        if (peer >= R) p.host_egress_bytes += S;
        else if (q == 0) p.intra_host_bytes += S;
      };
      if (q >= P) {
        to(q - P);
        continue;
      }
      if (q < N - P) to(q + P);
      for (int b = 1; b < P; b *= 2) to(q ^ b);
    }
  } else if (plan.all_to_all || plan.one_shot) {
    p.steps = plan.one_shot ? 1 : 2;
    messages = uint64_t(p.steps) * uint64_t(N - 1) * micro;
    // Of a rank's N - 1 peers, R - 1 share its host.
    p.host_egress_bytes = uint64_t(double(W) * R * (N - R) / (N - 1));
    p.intra_host_bytes = uint64_t(double(W) * (R - 1) / (N - 1));
  } else {
    p.steps = PhaseSteps(plan.rs, plan.num_rs) + PhaseSteps(plan.ag, plan.num_ag);
    messages = uint64_t(LaneMessages(plan.rs, plan.num_rs) + LaneMessages(plan.ag, plan.num_ag)) * micro;
    // Ranks in rank order on the ring: one edge per direction leaves each host, and a host's
    // two boundary ranks send on it what any rank sends in that direction: W in all.
    p.host_egress_bytes = m.hosts > 1 ? W : 0;
    p.intra_host_bytes = R > 1 ? W : 0;
  }

  if (r.options.validate && m.check_bytes > 0) {
    const Check c = CheckOf(N, R, m, plan);
    p.steps += c.steps;
    messages += c.messages;
    p.wire_bytes_per_rank += c.bytes;
    p.host_egress_bytes += c.host_egress_bytes;
    p.intra_host_bytes += c.intra_host_bytes;
  }
  p.messages = messages;
  p.latency_s = p.steps * m.alpha_s + messages * m.per_message_s;
  p.network_s = double(p.host_egress_bytes) / m.link_bytes_per_s;
  p.memory_s = double(p.intra_host_bytes) / m.shm_bytes_per_s / CoreShare(m);

  const double n = double(count);
  double cpu;
  if (plan.recursive_doubling) {  // one f32 add per step
    cpu = double(p.steps) * n / m.rates.add;
  } else if (plan.one_shot) {  // code the own contribution once, decode and add all N
    cpu = Quantized(plan.rs_wire) ? n / m.rates.dae + N * n / m.rates.decode : N * n / m.rates.add;
  } else {
    const double share = double(N - 1) / N;
    cpu = share * n / (Quantized(plan.rs_wire) ? m.rates.dae : m.rates.add);
    if (Quantized(plan.ag_wire)) cpu += n / m.rates.decode;
  }
  if (r.rotate) cpu += 2 * n / m.rates.rotate;
  p.codec_s = cpu / EffectiveThreads(m);
  // Both directions of the host's link pass through its stack, on its cores.
  const double cores = m.cores_per_host > 0 ? m.cores_per_host : double(R) * std::max(1, m.threads);
  p.stack_s = 2.0 * double(p.host_egress_bytes) * m.stack_s_per_byte / cores;

  // A link that lets a burst through at once (a token bucket) hides the latency of a call
  // whose bytes fit the burst; past it the link's rate sets the pace.
  const double burst = std::min(double(m.link_burst_bytes), double(p.host_egress_bytes));
  p.paced_s = (double(p.host_egress_bytes) - burst) / m.link_bytes_per_s;
  const double cpu_s = p.codec_s + p.stack_s;
  p.work_s = std::max({p.paced_s, p.memory_s, cpu_s}) + std::min(p.paced_s, cpu_s) / double(micro);
  p.seconds = std::max(p.network_s, p.latency_s + p.work_s);
  return p;
}

Prediction PredictHierarchical(const AllReduceOptions& inner, DType dtype, size_t count,
                               const Machine& m, const TuneTable& table) {
  const int R = std::max(1, m.ranks_per_host);
  if (R == 1) return PredictFlat(inner, dtype, count, m, table);
  const int H = std::max(1, m.hosts), N = H * R;
  // Across hosts: the R shard groups run side by side, sharing the host's link and cores. The
  // argument check runs once over all N ranks (below), not per group.
  Machine across = m;
  across.ranks_per_host = 1;
  across.link_bytes_per_s = m.link_bytes_per_s / R;
  across.cores_per_host = m.cores_per_host > 0 ? m.cores_per_host / R : 0;
  AllReduceOptions no_check = inner;
  no_check.validate = false;
  AllReduceOptions layout = inner;
  layout.ranks_per_host = uint32_t(R);
  layout.scale = ScaleOf(inner);  // the block grid the shards are cut on
  layout.block = BlockOf(inner);
  // Rank 0 owns shard 0 (hierarchical.cc cuts R shards on the block grid) and runs one inner
  // AllReduce per chunk of it, one after the other.
  const std::vector<Range> chunks = HierarchicalChunks(layout, dtype, count, N, 0);
  size_t shard = 0;
  for (const Range& k : chunks) shard += k.count;
  Prediction p;
  double inter_s = 0;
  for (const Range& k : chunks) {
    if (H < 2) break;
    const Prediction q = PredictFlat(no_check, dtype, k.count, across, table);
    p.algorithm = q.algorithm;
    p.steps += q.steps;
    p.messages += q.messages;
    p.wire_bytes_per_rank += q.wire_bytes_per_rank;
    p.host_egress_bytes += q.host_egress_bytes * uint64_t(R);
    p.latency_s += q.latency_s;
    p.network_s += q.network_s;
    p.paced_s += q.paced_s;
    p.codec_s += q.codec_s;
    p.stack_s += q.stack_s;
    p.work_s += q.work_s;
    inter_s += q.seconds;
  }

  // Inside the host: a reduce-scatter of the contributions in the dtype, summed in f32 (rank 0
  // sends the shards it does not own) and an all-gather in the dtype (it sends its own shard to
  // the R - 1 others); R - 1 peers each, per chunk.
  const double rs_bytes = double(count - shard) * DTypeSize(dtype);
  const double ag_bytes = double(shard) * double(R - 1) * DTypeSize(dtype);
  p.intra_host_bytes = uint64_t(rs_bytes + ag_bytes);
  p.wire_bytes_per_rank += p.intra_host_bytes;
  p.memory_s = (rs_bytes + ag_bytes) / m.shm_bytes_per_s / CoreShare(m);
  const double intra_s = p.memory_s + double(count - shard) / m.rates.add / EffectiveThreads(m);
  p.steps += 2;
  p.messages += 2 * uint64_t(R - 1) * chunks.size();
  Check c;
  if (inner.validate && m.check_bytes > 0) c = CheckOf(N, R, m, Plan{});
  p.steps += c.steps;
  p.messages += c.messages;
  p.wire_bytes_per_rank += c.bytes;
  p.host_egress_bytes += c.host_egress_bytes;
  p.intra_host_bytes += c.intra_host_bytes;
  const double extra_latency =
      double(2 + c.steps) * m.alpha_s + double(2 * (R - 1) * chunks.size() + c.messages) * m.per_message_s;
  p.latency_s += extra_latency;
  // The pipeline: the intra-host passes of chunks 2..C run while the chunks before them cross
  // the hosts; the first chunk's reduce-scatter and the last one's all-gather (1/C of them)
  // are exposed.
  const double C = double(chunks.size());
  p.seconds = intra_s / C + std::max(inter_s, intra_s * (C - 1) / C) + extra_latency;
  return p;
}

AllReduceOptions ModelTableInputs(const AllReduceOptions& o) {
  return AllReduceOptions{.algorithm = o.algorithm, .codec = o.codec, .block = o.block, .scale = o.scale,
                          .microshards = o.microshards, .quantize_min_bytes = o.quantize_min_bytes,
                          .f32_partials = o.f32_partials, .inner = o.inner,
                          .ranks_per_host = o.ranks_per_host, .rotation = o.rotation};
}

namespace {

// The rules of one section: the fastest candidate at each size of the sweep, a new rule where
// it changes. Each candidate is timed as auto would run it (a table of that one rule), so
// its rotation is the one auto's pick gets. With `inner` (ranks on several hosts), hierarchical
// with inner auto (on `inner`'s section for the hosts) is a quantized candidate too.
std::vector<TuneRule> ModelRules(const AllReduceOptions& o, DType dtype, const Machine& m,
                                 const TuneTable* inner = nullptr) {
  constexpr double kMargin = 0.05;
  std::vector<TuneRule> rules;
  for (size_t bytes = 16; bytes <= (size_t(1) << 34); bytes *= 2) {
    const size_t count = std::max<size_t>(1, bytes / DTypeSize(dtype));
    AllReduceOptions c = o;
    c.algorithm = Algorithm::kAuto;
    TuneRule best{0, Algorithm::kRing, Phases::kRSAG};
    double best_plain = 0, best_quantized = 0;
    int steps_plain = 0, steps_quantized = 0;
    TuneRule plain = best, quantized = best;
    ForEachAutoCandidate([&](Algorithm a) {
      const TuneRule rule{0, a, Phases::kRSAG};
      const Prediction p = PredictFlat(c, dtype, count, m, TuneTable::Single(rule));
      if (p.algorithm != a || p.seconds <= 0) return;  // below the size gate, or refused
      const bool q = IsQuantized(a);
      double& best_s = q ? best_quantized : best_plain;
      int& best_steps = q ? steps_quantized : steps_plain;
      // A tie goes to fewer steps, whose latency a network adds beyond what the model
      // charges (with EQUARX_STEP_US 0 a ring and two_shot of as many messages tie).
      if (best_s == 0 || p.seconds < best_s || (p.seconds == best_s && p.steps < best_steps)) {
        best_s = p.seconds;
        best_steps = p.steps;
        (q ? quantized : plain) = rule;
      }
    });
    if (inner) {
      AllReduceOptions h = c;  // PredictHierarchical's options are the inner plan's: auto
      const Prediction p = PredictHierarchical(h, dtype, count, m, *inner);
      if (p.seconds > 0 && (best_quantized == 0 || p.seconds < best_quantized)) {
        best_quantized = p.seconds;
        quantized = TuneRule{0, Algorithm::kHierarchical, Phases::kRSAG};
      }
    }
    // A quantized candidate must beat the fastest unquantized one by kMargin, so that a near
    // tie stays exact.
    best = best_quantized > 0 && (best_plain == 0 || best_quantized < best_plain * (1 - kMargin)) ? quantized : plain;
    if (rules.empty() || rules.back().algorithm != best.algorithm) {
      best.min_bytes = rules.empty() ? 0 : bytes;
      rules.push_back(best);
    }
  }
  return rules;
}

}  // namespace

TuneTable ModelTuneTable(const AllReduceOptions& options, DType dtype, int ranks,
                         const AutoNetwork& network) {
  const AllReduceOptions o = ModelTableInputs(options);
  TuneTable t = TuneTable::Defaults();
  if (ranks < 2) return t;
  const int R = o.ranks_per_host > 1 && ranks % int(o.ranks_per_host) == 0 ? int(o.ranks_per_host) : 1;
  env::Settings env;
  env.rotation = network.rotation;
  Machine m;
  m.hosts = ranks / R;
  m.ranks_per_host = R;
  m.link_bytes_per_s = network.link_gbit * 1e9 / 8;
  // Every rank on one host (ranks_per_host = ranks): no link; the steps are the host's.
  m.alpha_s = (m.hosts == 1 ? kLocalStepUs : network.step_us) * 1e-6;
  m.per_message_s = m.hosts == 1 ? 0 : network.message_us * 1e-6;
  m.check_bytes = kCheckBytes;
  m.env = &env;
  // Ranks on several hosts: hierarchical's inner plans get a section for the hosts, and auto
  // may choose hierarchical itself.
  const bool hosts = R > 1 && ranks / R >= 2;
  if (hosts && (o.algorithm == Algorithm::kHierarchical || o.algorithm == Algorithm::kAuto)) {
    Machine across = m;  // as PredictHierarchical: R shard groups share each host's link
    across.ranks_per_host = 1;
    across.link_bytes_per_s /= R;
    t.sections.push_back({ranks / R, dtype, ModelRules(o, dtype, across)});
  }
  const bool auto_hier = hosts && o.algorithm == Algorithm::kAuto;
  t.sections.push_back({ranks, dtype, ModelRules(o, dtype, m, auto_hier ? &t : nullptr)});
  return t;
}

}  // namespace equarx::algo
