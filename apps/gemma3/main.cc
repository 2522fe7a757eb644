// equarx-gemma3 — Gemma 3 tensor-parallel prefill and decode with equarx AllReduce.
//
//   equarx-gemma3 info     --model GGUF
//   equarx-gemma3 tokenize --model GGUF --prompt TEXT
//   equarx-gemma3 logits   --model GGUF --prompt TEXT [--tp N] [--top K] [reduce options]
//   equarx-gemma3 eval     --model GGUF --text FILE[,FILE...] --tp N [reduce options]
//                          [--tokens T] [--chunks C] [--sweep] [--baselines] [--json OUT]
//                          [--dump-activations DIR [--dump-layers L,L,...]]
//   equarx-gemma3 bench    --model GGUF --tp N [--tokens 512,1024,2048] [--reps R] [--sweep]
//                          [--gemm-threads N] [--json OUT]
//   equarx-gemma3 generate --model GGUF (--prompt TEXT | --prompt-tokens N) [--tokens N] [--tp N]
//                          [reduce options] [--allreduce equarx,mpi] [--compare-exact] [--json OUT]
//   mpirun -np N equarx-gemma3 bench|generate ...   one rank per process (the data path from
//                          EQUARX_DATA_PATH); only bench and generate run under mpirun
// Reduce options: every AllReduce option of the library (--algo, --phases, --codec, --block,
// --rotation, ...; tools/common/option_flags.h) plus --dtype f32|bf16 (what the activations are
// cast to for the AllReduce). In eval, bench and generate each takes a comma list, and the runs
// sweep their product. The default algorithm here is the unquantized ring.
// "Exact" in eval is the single-rank (TP-1) f32 forward pass: no AllReduce at all.
// Unknown flags, missing values and malformed numbers are errors (exit 2).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "args.h"
#include "cli.h"
#include "eval.h"
#include "gemm.h"
#include "gguf.h"
#include "launch.h"
#include "model.h"
#include "mpi_runner.h"
#include "option_flags.h"
#include "runner.h"
#include "stats.h"
#include "tokenizer.h"

using namespace gemma3;
using equarx::tools::ArgParser;
using equarx::tools::OptionFlags;

namespace {

constexpr const char* kCommands = "info|tokenize|logits|eval|bench|generate";

// Parses argv[2..] for `command`; returns 0 to go on, else the exit status (help: 0 printed).
int ParseArgs(int argc, char** argv, Args* a, bool* stop) {
  *stop = true;
  if (argc < 2) {
    std::fprintf(stderr, "usage: equarx-gemma3 %s --model GGUF [options] (--help for more)\n", kCommands);
    return 2;
  }
  a->command = argv[1];
  const std::string c = a->command;
  if (c == "--help" || c == "-h") {
    std::printf("usage: equarx-gemma3 %s --model GGUF [options]; equarx-gemma3 COMMAND --help\n", kCommands);
    return 0;
  }
  if (c != "info" && c != "tokenize" && c != "logits" && c != "eval" && c != "bench" && c != "generate") {
    std::fprintf(stderr, "equarx-gemma3: unknown command '%s' (%s)\n", c.c_str(), kCommands);
    return 2;
  }
  a->parser = std::make_unique<ArgParser>("equarx-gemma3 " + c, "--model GGUF [options]");
  ArgParser& p = *a->parser;
  p.AddString("model", &a->model, "the GGUF file (default $EQUARX_GEMMA3_MODEL; scripts/fetch_model.sh)", "GGUF");
  const bool reduce = c == "logits" || c == "eval" || c == "bench" || c == "generate";
  if (c == "tokenize" || c == "logits" || c == "generate") p.AddString("prompt", &a->prompt, "the text", "TEXT");
  if (reduce) {
    p.AddUint("tp", &a->tp, "tensor-parallel ranks (in-process; under mpirun the world size)");
    // In eval and bench every reduce option takes a comma list (a sweep).
    equarx::AllReduceOptions defaults;
    defaults.algorithm = equarx::Algorithm::kRing;  // the app's default: the unquantized ring
    a->flags = std::make_unique<OptionFlags>(&p, c != "logits", std::set<std::string>{}, defaults);
    p.AddString("dtype", &a->dtypes, "what the activations are cast to for the AllReduce: f32 or bf16"
                                     " (comma list in eval/bench/generate; default f32)", "T");
  }
  if (c == "bench" || c == "generate")
    p.AddString("allreduce", &a->allreduce, "who sums: equarx, or mpi (MPI_Allreduce, under mpirun; comma list;"
                                            " default equarx)", "B");
  if (c == "logits") p.AddUint("top", &a->top, "how many top tokens to print (default 10)");
  if (c == "eval") {
    p.AddString("text", &a->text, "comma list of text files", "FILES");
    p.AddString("tokens", &a->tokens, "tokens per chunk, BOS included (default 512)", "T");
    p.AddUint("chunks", &a->chunks, "chunks per text, from its start (default 1)");
    p.AddFlag("baselines", &a->baselines, "add the unquantized f32 and bf16 rings as rows");
    p.AddFlag("quiet", &a->quiet, "no progress lines on stderr");
    p.AddString("dump-activations", &a->dump_dir,
                "write every AllReduce operand of the dumped layers, one .npy per rank", "DIR");
    p.AddString("dump-layers", &a->dump_layers, "layers to dump (default all)", "L,L");
  }
  if (c == "bench") {
    p.AddString("tokens", &a->tokens, "comma list of prompt lengths (default 512,1024,2048)", "T,T");
    p.AddUint("reps", &a->reps, "timed passes per configuration after one warm-up (default 3)");
  }
  if (c == "generate") {
    p.AddUint("prompt-tokens", &a->prompt_tokens, "instead of --prompt: BOS and the first N - 1 tokens of"
                                                  " --prompt-file", "N");
    p.AddString("prompt-file", &a->prompt_file, "the text of --prompt-tokens (default apps/gemma3/data/prompt.txt)",
                "FILE");
    p.AddString("tokens", &a->tokens, "tokens to generate (default 32)", "N");
    p.AddFlag("compare-exact", &a->compare_exact, "also run the exact single rank (no AllReduce) and print where"
                                                  " each configuration's tokens first differ from its");
    p.AddFlag("warmup", &a->warmup, "one untimed run of the prompt and 2 tokens before each configuration"
                                    " (default on; --warmup=0 skips it)");
  }
  if (c == "bench" || c == "generate")  // Not --threads: the AllReduce option (codec threads).
    p.AddUint("gemm-threads", &a->threads, "GEMM threads per rank under mpirun (0 = the cores)");
  if (c == "eval" || c == "bench")
    p.AddFlag("sweep", &a->sweep, "the preset table of configurations (see docs/gemma3.md)");
  if (c == "eval" || c == "bench" || c == "generate")
    p.AddString("json", &a->json, "write the rows as JSON", "FILE");
  if (auto rc = p.ParseCommandLine(argc - 1, argv + 1, reduce ? OptionFlags::ValuesHelp() : ""))
    return *rc;  // *stop is still true
  *stop = false;
  return 0;
}

// A failed load or forward pass: its message on stderr, exit status 1.
int Fail(const equarx::Status& st) {
  std::fprintf(stderr, "%s\n", st.message().c_str());
  return 1;
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
  auto ids = m.tok.Encode(a.prompt);
  for (int32_t id : ids) std::printf("%d ", id);
  std::printf("\n%s\n", m.tok.Decode(ids).c_str());
  return 0;
}

int CmdLogits(const Args& a) {
  Loaded m;
  std::vector<ReduceConfig> rcs;
  if (const auto status = LoadModelAndConfigs(a, &m, &rcs)) return *status;
  const ReduceConfig rc = rcs.front();
  InProcessRunner run;
  LmHead head;
  equarx::Status load = run.Load(m.file, m.config, a.tp ? static_cast<int>(a.tp) : 1);
  if (load.ok()) load = head.Load(m.file, m.config, HardwareThreads());
  if (!load.ok()) return Fail(load);
  auto ids = m.tok.Encode(a.prompt);
  std::vector<float> hidden;
  RunStats st;
  if (const equarx::Status fw = run.Forward(ids, rc, &hidden, &st); !fw.ok()) return Fail(fw);
  std::vector<float> logits(head.vocab());
  head.Logits(hidden.data() + (ids.size() - 1) * m.config.d_model, 1, logits.data(), 1);
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  size_t k = std::min<size_t>(a.top, order.size());
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int x, int y) { return logits[x] > logits[y]; });
  std::printf("tokens:");
  for (int32_t id : ids) std::printf(" %d", id);
  std::printf("\nlast position top-%zu:\n", k);
  for (size_t i = 0; i < k; ++i)
    std::printf("  %6d %10.4f  %s\n", order[i], logits[order[i]], m.tok.Decode({order[i]}).c_str());
  return 0;
}

int CmdEval(const Args& a) {
  Loaded m;
  std::vector<ReduceConfig> configs;
  if (const auto status = LoadModelAndConfigs(a, &m, &configs)) return *status;
  if (a.sweep) configs = Sweep(configs.front());
  if (a.baselines) {  // the unquantized rings first: f32 (float noise) and bf16 (the paper's baseline)
    ReduceConfig ring;
    ring.options.algorithm = equarx::Algorithm::kRing;
    ReduceConfig ring_bf16 = ring;
    ring_bf16.bf16 = true;
    configs.insert(configs.begin(), {ring, ring_bf16});
  }
  const int tp = a.tp ? static_cast<int>(a.tp) : 2;
  const long tokens = a.tokens.empty() ? 512 : std::atol(a.tokens.c_str());
  if (tokens < 2 || a.chunks < 1) { std::fprintf(stderr, "equarx-gemma3 eval: --tokens must be >= 2, --chunks >= 1\n"); return 2; }
  const size_t T = static_cast<size_t>(tokens), chunks = static_cast<size_t>(a.chunks);
  std::vector<int> dump_layers;
  for (const std::string& l : Split(a.dump_layers, ',')) dump_layers.push_back(std::atoi(l.c_str()));
  InProcessRunner exact_run, run;
  LmHead head;
  const int hw = HardwareThreads();
  equarx::Status load = exact_run.Load(m.file, m.config, 1);
  if (load.ok()) load = run.Load(m.file, m.config, tp);
  if (load.ok()) load = head.Load(m.file, m.config, hw);
  if (!load.ok()) return Fail(load);
  std::vector<QualityAccum> acc(configs.size());
  std::vector<char> agree(configs.size(), 1);
  auto texts = Split(a.text, ',');
  if (texts.empty()) { std::fprintf(stderr, "equarx-gemma3 eval: --text FILE is required\n"); return 2; }
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
      if (const equarx::Status fw = exact_run.Forward(ids, none, &hidden, &st); !fw.ok()) return Fail(fw);
      ExactChunk exact;
      ComputeExact(head, hidden, ids, hw, &exact);
      if (!a.dump_dir.empty()) {  // the operands of the unquantized f32 ring, one file per rank
        ReduceConfig dump;
        dump.options.algorithm = equarx::Algorithm::kRing;
        dump.dump_prefix = a.dump_dir + "/chunk" + std::to_string(total_chunks) + "_";
        dump.dump_layers = dump_layers;
        if (const equarx::Status fw = run.Forward(ids, dump, &hidden, &st); !fw.ok()) return Fail(fw);
      }
      for (size_t i = 0; i < configs.size(); ++i) {
        const ReduceConfig& rc = configs[i];
        if (const equarx::Status fw = run.Forward(ids, rc, &hidden, &st); !fw.ok()) return Fail(fw);
        agree[i] &= st.ranks_agree;
        CompareRun(head, exact, hidden, hw, &acc[i]);
      }
      ++total_chunks;
      if (!a.quiet) std::fprintf(stderr, "  %s chunk %zu done\n", path.c_str(), c);
    }
  }
  if (total_chunks == 0) { std::fprintf(stderr, "texts shorter than --tokens\n"); return 1; }
  // Wire bytes per rank of one AllReduce of a chunk, relative to the bf16 ring's.
  const size_t count = T * size_t(m.config.d_model);
  equarx::AllReduceOptions ring;
  ring.algorithm = equarx::Algorithm::kRing;
  const double ring_bf16_bytes =
      double(equarx::Communicator::WireBytesPerRank(count, equarx::DType::kBFloat16, tp, ring));
  std::printf("model %s  tp %d  %zu chunk(s) of %zu tokens  exact = TP-1 f32 (no AllReduce)\n",
              m.config.arch.c_str(), tp, total_chunks, T);
  std::printf("%-40s %10s %10s %9s %8s %11s %10s %6s %6s\n", "config", "ppl_exact", "ppl", "dppl_%",
              "top1_%", "mean_KL", "max_KL", "wire", "agree");
  std::string json = "{\"tp\": " + std::to_string(tp) + ", \"tokens\": " + std::to_string(T) +
                     ", \"chunks\": " + std::to_string(total_chunks) + ", \"texts\": \"" + a.text +
                     "\", \"exact\": \"tp1_f32\", \"results\": [";
  for (size_t i = 0; i < configs.size(); ++i) {
    const QualityAccum& q = acc[i];
    const ReduceConfig& rc = configs[i];
    const double dppl = (q.Perplexity() / q.PerplexityExact() - 1) * 100;
    const double wire = double(equarx::Communicator::WireBytesPerRank(
                            count, rc.bf16 ? equarx::DType::kBFloat16 : equarx::DType::kFloat32, tp,
                            rc.options)) / ring_bf16_bytes;
    std::printf("%-40s %10.4f %10.4f %+9.4f %8.3f %11.3e %10.3e %6.3f %6s\n", rc.Name().c_str(),
                q.PerplexityExact(), q.Perplexity(), dppl, 100 * q.Top1Agreement(), q.MeanKl(), q.kl_max,
                wire, agree[i] ? "yes" : "NO");
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "%s{\"config\": \"%s\", \"algo\": \"%s\", \"phases\": \"%s\", \"block\": %zu, "
                  "\"options\": \"%s\", \"dtype\": \"%s\", \"wire_vs_bf16_ring\": %.6f, "
                  "\"positions\": %zu, \"ppl_exact\": %.6f, \"ppl\": %.6f, \"top1\": %.6f, "
                  "\"kl_mean\": %.6e, \"kl_max\": %.6e, \"ranks_agree\": %s}",
                  i ? ", " : "", rc.Name().c_str(),
                  std::string(equarx::AlgorithmName(rc.options.algorithm)).c_str(),
                  std::string(equarx::PhasesName(rc.options.phases)).c_str(), equarx::ResolveOptions(rc.options).block,
                  equarx::FormatOptions(rc.options).c_str(), rc.bf16 ? "bf16" : "f32", wire,
                  q.positions, q.PerplexityExact(), q.Perplexity(), q.Top1Agreement(), q.MeanKl(), q.kl_max,
                  agree[i] ? "true" : "false");
    json += buf;
  }
  json += "]}\n";
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    out << json;
    if (!out) { std::fprintf(stderr, "cannot write %s\n", a.json.c_str()); return 1; }
  }
  return 0;
}

// bench: prefill latency per configuration and token count, in-process (--tp N) or one rank
// per process under mpirun (the world size is the TP degree). Every configuration runs `reps`
// times after one untimed warm-up pass; the table gives medians.
int CmdBench(const Args& a, equarx::tools::World* mpi) {
  Loaded m;
  std::vector<ReduceConfig> configs;
  if (const auto status = LoadModelAndConfigs(a, &m, &configs, mpi != nullptr)) return *status;
  const ReduceConfig base = configs.front();
  const int reps = static_cast<int>(a.reps);
  if (reps < 1) { std::fprintf(stderr, "--reps must be at least 1\n"); return 2; }
  if (a.sweep) {
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
  const bool root = !mpi || mpi->rank() == 0;
  int status = 0;
  const std::unique_ptr<Runner> runner = MakeRunner(a, m, mpi, 4, &status);
  if (!runner) return status;
  if (root)
    std::printf("tp %d %s, %d GEMM thread(s) per rank, %s kernel, median of %d after 1 warm-up\n",
                runner->ranks(), runner->transport().c_str(), runner->threads_per_rank(),
                GemmUsesAvx2() ? "avx2+fma" : "scalar", reps);
  if (root)
    std::printf("%-36s %7s %10s %10s %8s %9s %6s\n", "config", "tokens", "prefill_s", "reduce_s", "reduce%",
                "GFLOP/s", "agree");
  std::string jsonl;
  for (const auto& tstr : Split(a.tokens.empty() ? "512,1024,2048" : a.tokens, ',')) {
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
        if (const equarx::Status fw = runner->Forward(ids, rc, &hidden, &st); !fw.ok()) return Fail(fw);
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
  if (root && !a.json.empty()) {
    std::ofstream out(a.json);
    out << jsonl;
    if (!out) { std::fprintf(stderr, "cannot write %s\n", a.json.c_str()); return 1; }
  }
  return 0;
}

// One run of the command line; `mpi` is the MPI world under mpirun, else null.
int Main(int argc, char** argv, equarx::tools::World* mpi) {
  Args a;
  bool stop = false;
  if (const int rc = ParseArgs(argc, argv, &a, &stop); stop) return rc;
  if (mpi && a.command != "bench" && a.command != "generate") {
    if (mpi->rank() == 0)
      std::fprintf(stderr, "equarx-gemma3: under mpirun only 'bench' and 'generate' run (one rank per process); "
                           "run '%s' without mpirun (--tp N runs the ranks in-process)\n", a.command.c_str());
    return 2;
  }
  if (a.command == "bench") return CmdBench(a, mpi);
  if (a.command == "generate") return CmdGenerate(a, mpi);
  if (a.command == "info") return CmdInfo(a);
  if (a.command == "tokenize") return CmdTokenize(a);
  if (a.command == "logits") return CmdLogits(a);
  return CmdEval(a);
}

}  // namespace

int main(int argc, char** argv) {
  if (!equarx::tools::UnderMpirun()) return Main(argc, argv, nullptr);
  // Under mpirun every process is one tensor-parallel rank (bench, generate), in the tools' MPI world.
  int rc = 1;
  const equarx::Status st = equarx::tools::RunMpi(
      &argc, &argv, [&](equarx::tools::World& w) { rc = Main(argc, argv, &w); });
  if (!st.ok()) {
    std::fprintf(stderr, "equarx-gemma3: %s\n", st.ToString().c_str());
    return 1;
  }
  return rc;
}
