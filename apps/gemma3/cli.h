// cli.h — what the commands of equarx-gemma3 (main.cc, generate_cmd.cc) share: their parsed
// flags, the model, the reduce configurations the flags ask for, and the runner of the ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "gguf.h"
#include "model.h"
#include "option_flags.h"
#include "runner.h"
#include "tokenizer.h"
#include "world.h"

namespace gemma3 {

// The flags of one command, parsed. Reduce options and --dtype are registered when the command
// sums (logits, eval, bench, generate).
struct Args {
  std::string command, model, prompt, text, json, dump_dir, dump_layers, dtypes = "f32";
  std::string tokens, allreduce = "equarx", prompt_file;
  uint64_t tp = 0, top = 10, chunks = 1, reps = 3, threads = 0, prompt_tokens = 0;
  bool sweep = false, baselines = false, quiet = false, compare_exact = false, warmup = true;
  std::unique_ptr<equarx::tools::ArgParser> parser;
  std::unique_ptr<equarx::tools::OptionFlags> flags;
  bool Given(const char* name) const { return parser->seen(name); }
};

struct Loaded {
  GgufFile file;
  Config config;
  Tokenizer tok;
};

std::vector<std::string> Split(const std::string& s, char sep);
/// The whole file; empty if it cannot be read.
std::string ReadFile(const std::string& path);

/// The model of --model (or $EQUARX_GEMMA3_MODEL); false, said on stderr, if it cannot load.
bool LoadModel(const Args& a, Loaded* m);
/// What logits, eval, bench and generate start from: the model, then the reduce configurations
/// of the flags (the product of the option lists, dtypes and --allreduce backends). Returns the
/// command's exit status where one fails (1: the model; 2: the flags, said as
/// "equarx-gemma3 COMMAND: why"), else nothing. MPI_Allreduce (--allreduce mpi) only
/// `under_mpirun`.
std::optional<int> LoadModelAndConfigs(const Args& a, Loaded* m, std::vector<ReduceConfig>* configs,
                                       bool under_mpirun = false);

/// The ranks of bench and generate: in process (--tp, default `default_tp`), or this process's
/// rank under mpirun (`mpi`; --tp, if given, must be the world size). Null with *status set
/// (2: the flags, 1: loading) on failure, said on stderr.
std::unique_ptr<Runner> MakeRunner(const Args& a, const Loaded& m, equarx::tools::World* mpi,
                                   int default_tp, int* status);

/// equarx-gemma3 generate (generate_cmd.cc).
int CmdGenerate(const Args& a, equarx::tools::World* mpi);

}  // namespace gemma3
