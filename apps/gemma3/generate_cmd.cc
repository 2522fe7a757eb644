// generate_cmd.cc — equarx-gemma3 generate: greedy decode with a KV cache (generate.h), in
// process (--tp N, ranks as threads) or one rank per process under mpirun, for each reduce
// configuration the flags ask for (their product, as in bench). Per configuration it prints the
// generated text, the time to first token, prefill tokens/s, decode tokens/s with the median
// and p99 time per token, the AllReduce calls and bytes per token, the CPU time of decode's work
// outside the collectives (all ranks together) and, with --compare-exact,
// where its tokens first differ from the exact run's (one rank, no AllReduce); --json writes
// one line per configuration. Every rank agrees on every token or the command fails (exit 1).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "cli.h"
#include "gemm.h"
#include "generate.h"
#include "mpi_runner.h"
#include "stats.h"

#ifndef GEMMA3_PROMPT_FILE
#define GEMMA3_PROMPT_FILE "apps/gemma3/data/prompt.txt"
#endif

namespace gemma3 {
namespace {

constexpr size_t kDefaultNewTokens = 32;

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string JsonTokens(const std::vector<int32_t>& t) {
  std::string out = "[";
  for (size_t i = 0; i < t.size(); ++i) out += (i ? "," : "") + std::to_string(t[i]);
  return out + "]";
}

// The prompt of the flags: --prompt's text, or BOS and the first N - 1 tokens of the prompt
// file. Returns the exit status on a bad request (said on stderr), else nothing.
std::optional<int> Prompt(const Args& a, const Loaded& m, bool root, std::vector<int32_t>* ids) {
  const bool text = a.Given("prompt"), synthetic = a.Given("prompt-tokens");
  auto fail = [&](const std::string& why) {
    if (root) std::fprintf(stderr, "equarx-gemma3 generate: %s\n", why.c_str());
    return 2;
  };
  if (text == synthetic) return fail("give either --prompt TEXT or --prompt-tokens N");
  if (a.Given("prompt-file") && !synthetic) return fail("--prompt-file goes with --prompt-tokens");
  if (text) {
    *ids = m.tok.Encode(a.prompt);
    if (ids->empty()) return fail("the prompt encodes to no tokens");
    return std::nullopt;
  }
  if (a.prompt_tokens < 1) return fail("--prompt-tokens must be at least 1");
  const std::string path = a.prompt_file.empty() ? GEMMA3_PROMPT_FILE : a.prompt_file;
  const std::string body = ReadFile(path);
  if (body.empty()) {
    if (root) std::fprintf(stderr, "equarx-gemma3 generate: cannot read %s\n", path.c_str());
    return 1;
  }
  const auto all = m.tok.Encode(body, false);
  if (all.size() + 1 < a.prompt_tokens)
    return fail(path + " holds " + std::to_string(all.size()) + " tokens: --prompt-tokens (BOS and the file's first"
                " tokens) can be at most " + std::to_string(all.size() + 1));
  ids->assign(1, m.tok.bos());
  ids->insert(ids->end(), all.begin(), all.begin() + static_cast<long>(a.prompt_tokens - 1));
  return std::nullopt;
}

// Where `run` first differs from `exact` (-1: nowhere).
long FirstDivergence(const std::vector<int32_t>& exact, const std::vector<int32_t>& run) {
  const size_t n = std::min(exact.size(), run.size());
  for (size_t i = 0; i < n; ++i)
    if (exact[i] != run[i]) return static_cast<long>(i);
  return exact.size() == run.size() ? -1 : static_cast<long>(n);
}

struct Row {
  std::string config, algo = "none", options, dtype = "f32", allreduce = "none";
  int tp = 1;
  const GenerateResult* res = nullptr;
  double wire_per_call = -1;  ///< equarx's wire bytes per rank of one call; < 0: unknown
};

// Prints one configuration's block and returns its JSON line.
std::string Report(const Row& row, const Loaded& m, size_t prompt_len, const std::string& transport, int threads,
                   const std::vector<int32_t>* exact) {
  const GenerateResult& r = *row.res;
  const size_t steps = r.token_s.size(), d = static_cast<size_t>(m.config.d_model);
  const double decode_s = std::accumulate(r.token_s.begin(), r.token_s.end(), 0.0);
  const double median = equarx::tools::Median(r.token_s), p99 = Percentile(r.token_s, 99);
  const double calls = row.tp > 1 && steps ? static_cast<double>(r.decode_reduce_calls) / steps : 0;
  const double elem = row.dtype == "bf16" ? 2 : 4, bytes = calls * d * elem;
  const long diverge = exact ? FirstDivergence(*exact, r.tokens) : -1;
  const std::string text = m.tok.Decode(r.tokens);
  std::printf("== %s\n%s\n", row.config.c_str(), text.c_str());
  std::printf("time to first token %.3f s (prefill %.3f s, %.1f tokens/s)\n", r.ttft_s, r.prefill_s,
              prompt_len / r.prefill_s);
  if (steps)
    std::printf("decode %.2f tokens/s over %zu tokens; per token median %.2f ms, p99 %.2f ms\n", steps / decode_s,
                steps, 1e3 * median, 1e3 * p99);
  if (steps && row.tp > 1)
    std::printf("AllReduce per token: %.0f calls of %.0f B (%.0f B)%s, %.1f%% of decode time\n", calls, d * elem,
                bytes,
                row.wire_per_call >= 0 ? (", wire " + std::to_string(static_cast<long long>(row.wire_per_call * calls)) +
                                          " B per rank").c_str() : "",
                100 * r.decode_reduce_s / decode_s);
  if (steps)
    std::printf("decode work outside the collectives: %.2f ms of CPU per token, all ranks together\n",
                1e3 * r.decode_compute_cpu_s / steps);
  std::printf("ranks agree on every token: yes\n");
  if (exact) {
    if (diverge < 0) std::printf("exact run: the same %zu tokens\n", r.tokens.size());
    else std::printf("exact run: first divergence at generated token %ld of %zu\n", diverge, r.tokens.size());
  }
  std::fflush(stdout);
  auto num = [](double v, bool known) { return known ? std::to_string(v) : std::string("null"); };
  std::string j = "{\"command\":\"generate\",\"tp\":" + std::to_string(row.tp) + ",\"transport\":" +
                  JsonString(transport) + ",\"threads\":" + std::to_string(threads) +
                  ",\"allreduce\":" + JsonString(row.allreduce) + ",\"config\":" + JsonString(row.config) +
                  ",\"algo\":" + JsonString(row.algo) + ",\"options\":" + JsonString(row.options) +
                  ",\"dtype\":" + JsonString(row.dtype) + ",\"prompt_tokens\":" + std::to_string(prompt_len) +
                  ",\"new_tokens\":" + std::to_string(r.tokens.size()) + ",\"ttft_s\":" + num(r.ttft_s, true) +
                  ",\"prefill_s\":" + num(r.prefill_s, true) +
                  ",\"prefill_tok_s\":" + num(prompt_len / r.prefill_s, true) +
                  ",\"decode_tok_s\":" + num(steps / decode_s, steps) + ",\"token_median_s\":" + num(median, steps) +
                  ",\"token_p99_s\":" + num(p99, steps) +
                  ",\"token_min_s\":" + num(steps ? *std::min_element(r.token_s.begin(), r.token_s.end()) : 0, steps) +
                  ",\"token_max_s\":" + num(steps ? *std::max_element(r.token_s.begin(), r.token_s.end()) : 0, steps) +
                  ",\"allreduce_calls_per_token\":" + num(calls, steps) +
                  ",\"allreduce_bytes_per_call\":" + num(row.tp > 1 ? d * elem : 0, true) +
                  ",\"allreduce_bytes_per_token\":" + num(bytes, steps) +
                  ",\"wire_bytes_per_token\":" + num(row.wire_per_call * calls, steps && row.wire_per_call >= 0) +
                  ",\"decode_reduce_share\":" + num(r.decode_reduce_s / decode_s, steps) +
                  ",\"decode_compute_cpu_s\":" + num(r.decode_compute_cpu_s, steps) +
                  ",\"prefill_reduce_s\":" + num(r.prefill_reduce_s, true) + ",\"ranks_agree\":true" +
                  ",\"hidden_hash\":\"" + Hex(r.hidden_hash) + "\"" +
                  ",\"first_divergence\":" + (exact && diverge >= 0 ? std::to_string(diverge) : "null") +
                  ",\"matches_exact\":" + (exact ? (diverge < 0 ? "true" : "false") : "null") +
                  ",\"tokens\":" + JsonTokens(r.tokens) + ",\"text\":" + JsonString(text) + "}\n";
  return j;
}

}  // namespace

int CmdGenerate(const Args& a, equarx::tools::World* mpi) {
  Loaded m;
  std::vector<ReduceConfig> configs;
  const bool root = !mpi || mpi->rank() == 0;
  if (const auto status = LoadModelAndConfigs(a, &m, &configs, mpi != nullptr)) return *status;
  const auto n_new = equarx::tools::ParseUint(a.tokens.empty() ? std::to_string(kDefaultNewTokens) : a.tokens);
  if (!n_new || *n_new < 1) {
    if (root) std::fprintf(stderr, "equarx-gemma3 generate: --tokens must be a count of at least 1\n");
    return 2;
  }
  const size_t N = static_cast<size_t>(*n_new);
  std::vector<int32_t> prompt;
  if (const auto status = Prompt(a, m, root, &prompt)) return *status;
  // Positions the cache must hold: the model's context, or kMaxPositions if it names none.
  const int64_t context = m.file.GetInt(m.config.arch + ".context_length", 0);
  const size_t limit = context > 0 ? std::min(static_cast<size_t>(context), kMaxPositions) : kMaxPositions;
  if (N > limit || prompt.size() + N - 1 > limit) {
    if (root)
      std::fprintf(stderr, "equarx-gemma3 generate: %zu prompt tokens + %zu new exceed %s of %zu positions\n",
                   prompt.size(), N, context > 0 ? "the model's context" : "the limit", limit);
    return 2;
  }
  int status = 0;
  const std::unique_ptr<Runner> runner = MakeRunner(a, m, mpi, 1, &status);
  if (!runner) return status;
  if (const equarx::Status st = runner->LoadHead(); !st.ok()) {
    std::fprintf(stderr, "equarx-gemma3: %s\n", st.message().c_str());
    return 1;
  }
  if (root)
    std::printf("tp %d %s, %d GEMM thread(s) per rank, %s kernel; prompt %zu tokens, %zu new tokens (greedy)\n",
                runner->ranks(), runner->transport().c_str(), runner->threads_per_rank(),
                GemmUsesAvx2() ? "avx2+fma" : "scalar", prompt.size(), N);
  std::string jsonl;
  // The exact run: one rank, no AllReduce, in this process (under mpirun rank 0's; the other
  // ranks wait for it without a deadline).
  GenerateResult exact;
  if (a.compare_exact) {
    equarx::Status st;
    if (root) {
      InProcessRunner one;
      ReduceConfig none;
      st = one.Load(m.file, m.config, 1);
      if (st.ok()) st = one.LoadHead();
      if (st.ok()) st = one.Generate(prompt, N, none, a.warmup, &exact);
      if (!st.ok()) std::fprintf(stderr, "equarx-gemma3 generate: the exact run: %s\n", st.ToString().c_str());
      Row row;
      row.config = "exact (TP 1, no AllReduce)";
      row.res = &exact;
      if (st.ok()) jsonl += Report(row, m, prompt.size(), "in-process", one.threads_per_rank(), nullptr);
    }
    if (!(mpi ? RootVerdict(st.ok()) : st.ok())) return 1;
  }
  for (const ReduceConfig& rc : configs) {
    GenerateResult res;
    const equarx::Status st = runner->Generate(prompt, N, rc, a.warmup, &res);
    if (!st.ok()) {
      if (root) std::fprintf(stderr, "equarx-gemma3 generate: %s: %s\n", rc.Name().c_str(), st.ToString().c_str());
      return 1;
    }
    if (!root) continue;
    Row row{rc.Name(), std::string(equarx::AlgorithmName(rc.options.algorithm)), equarx::FormatOptions(rc.options),
            rc.bf16 ? "bf16" : "f32", rc.mpi_allreduce ? "mpi" : "equarx", runner->ranks(), &res};
    if (rc.mpi_allreduce) {
      row.algo = "MPI_Allreduce";
      row.options = "";
    } else if (runner->ranks() > 1) {
      row.wire_per_call = static_cast<double>(equarx::Communicator::WireBytesPerRank(
          static_cast<size_t>(m.config.d_model), rc.bf16 ? equarx::DType::kBFloat16 : equarx::DType::kFloat32,
          runner->ranks(), rc.options));
    }
    jsonl += Report(row, m, prompt.size(), runner->transport(), runner->threads_per_rank(),
                    a.compare_exact ? &exact.tokens : nullptr);
  }
  if (root && !a.json.empty()) {
    std::ofstream out(a.json);
    out << jsonl;
    if (!out) { std::fprintf(stderr, "cannot write %s\n", a.json.c_str()); return 1; }
  }
  return 0;
}

}  // namespace gemma3
