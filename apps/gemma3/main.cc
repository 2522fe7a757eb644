// equarx-gemma3 — Gemma 3 tensor-parallel prefill with equarx AllReduce.
//
//   equarx-gemma3 info     --model GGUF
//   equarx-gemma3 tokenize --model GGUF --prompt TEXT
//   equarx-gemma3 logits   --model GGUF --prompt TEXT [--tp N] [--top K] [reduce options]
//   equarx-gemma3 eval     --model GGUF --text FILE[,FILE...] --tp N [reduce options]
//                          [--tokens T] [--chunks C] [--sweep] [--json OUT]
//   equarx-gemma3 bench    --model GGUF --tp N [--tokens 512,1024,2048] [--reps R] [--sweep]
//                          [--threads N] [--json OUT]
//   mpirun -np N equarx-gemma3 bench ...   one rank per process (the data path from
//                          EQUARX_DATA_PATH); only bench runs under mpirun
// Reduce options: --algo ring|full|full_bidir|semi|two_shot|naive_fp8 --phases rs|ag|rs+ag
//                 --codec int8|int4|fp8_e4m3|fp8_e5m2 --block B --dtype f32|bf16
// "Exact" in eval is the single-rank (TP-1) f32 forward pass: no AllReduce at all.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "eval.h"
#include "gemm.h"
#include "gguf.h"
#include "launch.h"
#include "model.h"
#include "mpi_runner.h"
#include "runner.h"
#include "stats.h"
#include "tokenizer.h"

using namespace gemma3;

namespace {

struct Args {
  std::string command;
  std::map<std::string, std::string> kv;
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  bool Has(const std::string& k) const { return kv.count(k) > 0; }
  long Int(const std::string& k, long def) const { return Has(k) ? std::atol(Get(k).c_str()) : def; }
};

int Usage() {
  std::fprintf(stderr,
               "usage: equarx-gemma3 info|tokenize|logits|eval|bench --model GGUF [options]\n"
               "  eval:  --text FILE[,FILE] --tp N [--algo A --phases P --codec C --block B --dtype f32|bf16]\n"
               "         [--tokens T (512)] [--chunks C (1)] [--sweep] [--json OUT]\n"
               "  bench: --tp N [--tokens 512,1024,2048] [--reps R (3)] [--sweep] [--json OUT]\n"
               "         under mpirun: one rank per process, [--threads N] GEMM threads per rank\n"
               "  logits/tokenize: --prompt TEXT [--tp N] [--top K]\n"
               "  exact = TP-1 f32 forward (no AllReduce)\n");
  return 2;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) return false;
    s = s.substr(2);
    auto eq = s.find('=');
    if (eq != std::string::npos) { a->kv[s.substr(0, eq)] = s.substr(eq + 1); continue; }
    if (s == "sweep" || s == "quiet") { a->kv[s] = "1"; continue; }
    if (i + 1 >= argc) return false;
    a->kv[s] = argv[++i];
  }
  return true;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

bool ReduceFromArgs(const Args& a, ReduceConfig* rc, std::string* error) {
  auto algo = equarx::ParseAlgorithm(a.Get("algo", "ring"));
  auto phases = equarx::ParsePhases(a.Get("phases", "rs+ag"));
  auto codec = equarx::ParseCodec(a.Get("codec", "int8"));
  if (!algo || !phases || !codec) { *error = "bad --algo/--phases/--codec"; return false; }
  rc->options.algorithm = *algo;
  rc->options.phases = *phases;
  rc->options.codec = *codec;
  rc->options.block = static_cast<size_t>(a.Int("block", static_cast<long>(equarx::kDefaultBlock)));
  rc->bf16 = a.Get("dtype", "f32") == "bf16";
  return true;
}

// The configurations of the quality table.
std::vector<ReduceConfig> Sweep(const ReduceConfig& base) {
  std::vector<ReduceConfig> out;
  ReduceConfig rc = base;
  rc.options.algorithm = equarx::Algorithm::kRing;
  out.push_back(rc);
  for (auto algo : {equarx::Algorithm::kFull, equarx::Algorithm::kFullBidir, equarx::Algorithm::kSemi})
    for (auto ph : {equarx::Phases::kRS, equarx::Phases::kAG, equarx::Phases::kRSAG}) {
      rc.options.algorithm = algo;
      rc.options.phases = ph;
      out.push_back(rc);
    }
  rc.options.algorithm = equarx::Algorithm::kNaiveFp8;
  rc.options.phases = equarx::Phases::kRSAG;
  out.push_back(rc);
  return out;
}

struct Loaded {
  GgufFile file;
  Config config;
  Tokenizer tok;
};

bool LoadModel(const Args& a, Loaded* m) {
  std::string err;
  std::string path = a.Get("model", std::getenv("EQUARX_GEMMA3_MODEL") ? std::getenv("EQUARX_GEMMA3_MODEL") : "");
  if (path.empty()) { std::fprintf(stderr, "--model GGUF is required (see scripts/fetch_model.sh)\n"); return false; }
  if (!m->file.Open(path, &err) || !m->config.Read(m->file, &err) || !m->tok.Load(m->file, &err)) {
    std::fprintf(stderr, "equarx-gemma3: %s\n", err.c_str());
    return false;
  }
  return true;
}

int CmdInfo(const Args& a) {
  Loaded m;
  if (!LoadModel(a, &m)) return 1;
  const Config& c = m.config;
  std::printf("arch %s  d_model %d  layers %d  d_ff %d  heads %d  kv_heads %d  head_dim %d  vocab %d\n",
              c.arch.c_str(), c.d_model, c.n_layers, c.d_ff, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab);
  std::printf("rope base global %.0f local %.0f  sliding window %d  pattern %d  attn scale %.5f  softcap %g/%g\n",
              c.rope_base_global, c.rope_base_local, c.sliding_window, c.swa_pattern, c.attn_scale,
              c.attn_softcap, c.final_softcap);
  std::map<std::string, int> types;
  for (const auto& t : m.file.tensors()) types[GgmlTypeName(t.type)]++;
  for (const auto& [k, v] : types) std::printf("  %-6s %d tensors\n", k.c_str(), v);
  std::printf("gemm kernel: %s, %d hardware threads\n", GemmUsesAvx2() ? "avx2+fma" : "scalar", HardwareThreads());
  return 0;
}

int CmdTokenize(const Args& a) {
  Loaded m;
  if (!LoadModel(a, &m)) return 1;
  auto ids = m.tok.Encode(a.Get("prompt"));
  for (int32_t id : ids) std::printf("%d ", id);
  std::printf("\n%s\n", m.tok.Decode(ids).c_str());
  return 0;
}

int CmdLogits(const Args& a) {
  Loaded m;
  if (!LoadModel(a, &m)) return 1;
  ReduceConfig rc;
  std::string err;
  if (!ReduceFromArgs(a, &rc, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 2; }
  InProcessRunner run;
  LmHead head;
  if (!run.Load(m.file, m.config, static_cast<int>(a.Int("tp", 1)), &err) ||
      !head.Load(m.file, m.config, HardwareThreads(), &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  auto ids = m.tok.Encode(a.Get("prompt"));
  std::vector<float> hidden;
  RunStats st;
  if (!run.Forward(ids, rc, &hidden, &st, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
  std::vector<float> logits(head.vocab());
  head.Logits(hidden.data() + (ids.size() - 1) * m.config.d_model, 1, logits.data(), 1);
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  size_t k = static_cast<size_t>(a.Int("top", 10));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int x, int y) { return logits[x] > logits[y]; });
  std::printf("tokens:");
  for (int32_t id : ids) std::printf(" %d", id);
  std::printf("\nlast position top-%zu:\n", k);
  for (size_t i = 0; i < k; ++i)
    std::printf("  %6d %10.4f  %s\n", order[i], logits[order[i]], m.tok.Decode({order[i]}).c_str());
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int CmdEval(const Args& a) {
  Loaded m;
  if (!LoadModel(a, &m)) return 1;
  ReduceConfig base;
  std::string err;
  if (!ReduceFromArgs(a, &base, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 2; }
  const int tp = static_cast<int>(a.Int("tp", 2));
  const size_t T = static_cast<size_t>(a.Int("tokens", 512));
  const size_t chunks = static_cast<size_t>(a.Int("chunks", 1));
  std::vector<ReduceConfig> configs = a.Has("sweep") ? Sweep(base) : std::vector<ReduceConfig>{base};
  InProcessRunner exact_run, run;
  LmHead head;
  const int hw = HardwareThreads();
  if (!exact_run.Load(m.file, m.config, 1, &err) || !run.Load(m.file, m.config, tp, &err) ||
      !head.Load(m.file, m.config, hw, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  std::vector<QualityAccum> acc(configs.size());
  std::vector<char> agree(configs.size(), 1);
  auto texts = Split(a.Get("text"), ',');
  if (texts.empty()) { std::fprintf(stderr, "--text FILE is required\n"); return 2; }
  size_t total_chunks = 0;
  for (const auto& path : texts) {
    std::string text = ReadFile(path);
    if (text.empty()) { std::fprintf(stderr, "cannot read %s\n", path.c_str()); return 1; }
    auto all = m.tok.Encode(text, false);
    for (size_t c = 0; c < chunks && (c + 1) * (T - 1) <= all.size(); ++c) {
      std::vector<int32_t> ids{m.tok.bos()};
      ids.insert(ids.end(), all.begin() + c * (T - 1), all.begin() + (c + 1) * (T - 1));
      std::vector<float> hidden;
      RunStats st;
      ReduceConfig none;
      if (!exact_run.Forward(ids, none, &hidden, &st, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
      ExactChunk exact;
      ComputeExact(head, hidden, ids, hw, &exact);
      for (size_t i = 0; i < configs.size(); ++i) {
        if (!run.Forward(ids, configs[i], &hidden, &st, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
        agree[i] &= st.ranks_agree;
        CompareRun(head, exact, hidden, hw, &acc[i]);
      }
      ++total_chunks;
      std::fprintf(stderr, "  %s chunk %zu done\n", path.c_str(), c);
    }
  }
  if (total_chunks == 0) { std::fprintf(stderr, "texts shorter than --tokens\n"); return 1; }
  std::printf("model %s  tp %d  %zu chunk(s) of %zu tokens  exact = TP-1 f32 (no AllReduce)\n",
              m.config.arch.c_str(), tp, total_chunks, T);
  std::printf("%-32s %10s %10s %9s %8s %11s %10s %6s\n", "config", "ppl_exact", "ppl", "dppl_%",
              "top1_%", "mean_KL", "max_KL", "agree");
  std::string json = "{\"tp\": " + std::to_string(tp) + ", \"tokens\": " + std::to_string(T) +
                     ", \"chunks\": " + std::to_string(total_chunks) + ", \"texts\": \"" + a.Get("text") +
                     "\", \"exact\": \"tp1_f32\", \"results\": [";
  for (size_t i = 0; i < configs.size(); ++i) {
    const QualityAccum& q = acc[i];
    double dppl = (q.Perplexity() / q.PerplexityExact() - 1) * 100;
    std::printf("%-32s %10.4f %10.4f %+9.4f %8.3f %11.3e %10.3e %6s\n", configs[i].Name().c_str(),
                q.PerplexityExact(), q.Perplexity(), dppl, 100 * q.Top1Agreement(), q.MeanKl(), q.kl_max,
                agree[i] ? "yes" : "NO");
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"config\": \"%s\", \"algo\": \"%s\", \"phases\": \"%s\", \"block\": %zu, "
                  "\"positions\": %zu, \"ppl_exact\": %.6f, \"ppl\": %.6f, \"top1\": %.6f, "
                  "\"kl_mean\": %.6e, \"kl_max\": %.6e, \"ranks_agree\": %s}",
                  i ? ", " : "", configs[i].Name().c_str(),
                  std::string(equarx::AlgorithmName(configs[i].options.algorithm)).c_str(),
                  std::string(equarx::PhasesName(configs[i].options.phases)).c_str(), configs[i].options.block,
                  q.positions, q.PerplexityExact(), q.Perplexity(), q.Top1Agreement(), q.MeanKl(), q.kl_max,
                  agree[i] ? "true" : "false");
    json += buf;
  }
  json += "]}\n";
  if (a.Has("json")) std::ofstream(a.Get("json")) << json;
  return 0;
}

// bench: prefill latency per configuration and token count, in-process (--tp N) or one rank
// per process under mpirun (the world size is the TP degree). Every configuration runs `reps`
// times after one untimed warm-up pass; the table gives medians.
int CmdBench(const Args& a, const MpiSession* mpi) {
  Loaded m;
  if (!LoadModel(a, &m)) return 1;
  ReduceConfig base;
  std::string err;
  if (!ReduceFromArgs(a, &base, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 2; }
  const int reps = static_cast<int>(a.Int("reps", 3));
  if (reps < 1) { std::fprintf(stderr, "--reps must be at least 1\n"); return 2; }
  std::vector<ReduceConfig> configs{base};
  if (a.Has("sweep")) {
    // The bf16 ring (what a bf16 model sends unquantized) against the int8 EQuARX schedules,
    // all taking the same bf16 activations.
    configs.clear();
    ReduceConfig rc = base;
    rc.bf16 = true;
    rc.options.algorithm = equarx::Algorithm::kRing;
    configs.push_back(rc);
    for (auto algo : {equarx::Algorithm::kFullBidir, equarx::Algorithm::kSemi, equarx::Algorithm::kTwoShot}) {
      rc.options.algorithm = algo;
      rc.options.phases = equarx::Phases::kRSAG;
      configs.push_back(rc);
    }
  }
  std::unique_ptr<Runner> runner;
  const bool root = !mpi || mpi->rank() == 0;
  if (mpi) {
    if (a.Has("tp") && a.Int("tp", 0) != mpi->size()) {
      if (root) std::fprintf(stderr, "--tp %ld differs from the number of MPI processes (%d)\n", a.Int("tp", 0), mpi->size());
      return 2;
    }
    auto r = std::make_unique<MpiRunner>();
    if (!r->Load(m.file, m.config, static_cast<int>(a.Int("threads", 0)), &err)) {
      std::fprintf(stderr, "equarx-gemma3: %s\n", err.c_str());
      return 1;
    }
    runner = std::move(r);
  } else {
    auto r = std::make_unique<InProcessRunner>();
    if (!r->Load(m.file, m.config, static_cast<int>(a.Int("tp", 4)), &err)) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    runner = std::move(r);
  }
  if (root)
    std::printf("tp %d %s, %d GEMM thread(s) per rank, %s kernel, median of %d after 1 warm-up\n",
                runner->ranks(), runner->transport().c_str(), runner->threads_per_rank(),
                GemmUsesAvx2() ? "avx2+fma" : "scalar", reps);
  if (root)
    std::printf("%-36s %7s %10s %10s %8s %9s %6s\n", "config", "tokens", "prefill_s", "reduce_s", "reduce%",
                "GFLOP/s", "agree");
  std::string jsonl;
  for (const auto& tstr : Split(a.Get("tokens", "512,1024,2048"), ',')) {
    const long tl = std::atol(tstr.c_str());
    if (tl < 2) { if (root) std::fprintf(stderr, "bad --tokens entry '%s'\n", tstr.c_str()); return 2; }
    const size_t T = static_cast<size_t>(tl);
    std::vector<int32_t> ids(T);
    // A fixed pseudo-random token sequence (prefill cost does not depend on the text).
    const size_t vocab = static_cast<size_t>(std::max(m.config.vocab, 2));
    for (size_t i = 0; i < T; ++i) ids[i] = static_cast<int32_t>((1000 + (i * 7919) % 50000) % vocab);
    ids[0] = m.tok.bos();
    for (const auto& rc : configs) {
      std::vector<double> total, reduce, gflops;
      bool agree = true;
      std::vector<float> hidden;
      for (int r = 0; r <= reps; ++r) {
        RunStats st;
        if (!runner->Forward(ids, rc, &hidden, &st, &err)) { std::fprintf(stderr, "%s\n", err.c_str()); return 1; }
        if (r == 0) continue;  // warm-up
        total.push_back(st.total_s);
        reduce.push_back(st.reduce_s);
        gflops.push_back(st.gflops);
        agree &= st.ranks_agree;
      }
      const double t = equarx::tools::Median(total), rd = equarx::tools::Median(reduce),
                   gf = equarx::tools::Median(gflops);
      if (!root) continue;
      std::printf("%-36s %7zu %10.3f %10.3f %8.1f %9.1f %6s\n", rc.Name().c_str(), T, t, rd, 100 * rd / t,
                  gf, agree ? "yes" : "NO");
      std::fflush(stdout);
      char buf[768];
      std::snprintf(buf, sizeof buf,
                    "{\"tp\":%d,\"transport\":\"%s\",\"threads\":%d,\"config\":\"%s\",\"algo\":\"%s\","
                    "\"phases\":\"%s\",\"bf16\":%s,\"tokens\":%zu,\"reps\":%d,\"prefill_s\":%.6f,"
                    "\"prefill_min_s\":%.6f,\"prefill_max_s\":%.6f,\"reduce_s\":%.6f,\"gflops\":%.3f,"
                    "\"ranks_agree\":%s,\"hidden_hash\":\"%016llx\"}\n",
                    runner->ranks(), runner->transport().c_str(), runner->threads_per_rank(), rc.Name().c_str(),
                    std::string(equarx::AlgorithmName(rc.options.algorithm)).c_str(),
                    std::string(equarx::PhasesName(rc.options.phases)).c_str(), rc.bf16 ? "true" : "false", T,
                    reps, t, *std::min_element(total.begin(), total.end()),
                    *std::max_element(total.begin(), total.end()), rd, gf, agree ? "true" : "false",
                    static_cast<unsigned long long>(equarx::tools::Fnv1a64(hidden.data(), hidden.size() * sizeof(float))));
      jsonl += buf;
    }
  }
  if (root && a.Has("json")) {
    std::ofstream out(a.Get("json"));
    out << jsonl;
    if (!out) { std::fprintf(stderr, "cannot write %s\n", a.Get("json").c_str()); return 1; }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every process is one tensor-parallel rank (bench only).
  std::unique_ptr<MpiSession> mpi;
  if (equarx::tools::UnderMpirun()) {
    mpi = std::make_unique<MpiSession>(&argc, &argv);
    if (!mpi->ok()) { std::fprintf(stderr, "equarx-gemma3: MPI_Init failed\n"); return 1; }
  }
  Args a;
  if (!ParseArgs(argc, argv, &a)) return Usage();
  if (mpi && a.command != "bench") {
    if (mpi->rank() == 0)
      std::fprintf(stderr, "equarx-gemma3: under mpirun only 'bench' runs (one rank per process); "
                           "run '%s' without mpirun (--tp N runs the ranks in-process)\n", a.command.c_str());
    return 2;
  }
  if (a.command == "bench") return CmdBench(a, mpi.get());
  if (a.command == "info") return CmdInfo(a);
  if (a.command == "tokenize") return CmdTokenize(a);
  if (a.command == "logits") return CmdLogits(a);
  if (a.command == "eval") return CmdEval(a);
  return Usage();
}
