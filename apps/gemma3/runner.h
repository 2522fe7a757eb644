// runner.h — runs the tensor-parallel forward pass on N ranks: in-process (the ranks as
// threads of the tools' launcher, tools/common/world.h RunOnRanks, over equarx in-process
// communicators) or one rank per MPI process. The Reducer of each rank is an equarx AllReduce
// of the f32 activations (optionally cast to bf16 first, the dtype a bf16 model would put on
// the wire). Every failure is an equarx::Status.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "equarx/communicator.h"
#include "equarx/options.h"
#include "generate.h"
#include "model.h"
#include "world.h"

namespace gemma3 {

struct ReduceConfig {
  equarx::AllReduceOptions options;  ///< algorithm kRing = unquantized
  bool bf16 = false;                 ///< cast activations to bf16 for the AllReduce
  /// Sum with MPI_Allreduce instead of equarx (one rank per process under mpirun only): the
  /// same calls of the same counts, f32 values with MPI_SUM, or bf16 values (2 bytes each)
  /// with a user op that adds each pair in f32 and rounds to bf16. `options` do not apply.
  bool mpi_allreduce = false;
  /// When not empty, every rank writes the operand of each AllReduce of the layers in
  /// `dump_layers` (all when empty) to PREFIX L<layer>_<attn|mlp>_rank<r>.npy (f32, 1-D, T * d).
  std::string dump_prefix;
  std::vector<int> dump_layers;
  std::string Name() const;  ///< e.g. "semi rs+ag int8 B64 hadamard (f32 in)" or "ring (bf16 in)"
};

struct RunStats {
  double total_s = 0;       ///< wall time of the forward pass (slowest rank)
  double reduce_s = 0;      ///< time inside AllReduce (mean over ranks)
  double gflops = 0;        ///< achieved over all ranks together
  bool ranks_agree = true;  ///< every rank's output bitwise identical
};

/// A rank's reducer over `comm` (nullptr: single rank, identity). The reducer says only
/// whether a call failed (model.h); on rank 0 why goes to *why when given: the AllReduce's
/// status ("AllReduce failed: ...") or the operand dump's.
Reducer MakeReducer(equarx::Communicator* comm, const ReduceConfig& rc, equarx::Status* why);


/// Runs the forward pass on every rank of a tensor-parallel group.
class Runner {
 public:
  virtual ~Runner() = default;
  /// Hidden states of the last layer for tokens[T] (rank 0's copy; every process of an MPI
  /// group gets its own, bitwise equal when stats->ranks_agree). Collective under MPI.
  virtual equarx::Status Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc,
                                 std::vector<float>* hidden, RunStats* stats) = 0;
  /// Loads each rank's slice of the LM head, which Generate needs.
  virtual equarx::Status LoadHead() = 0;
  /// Greedy generation of `new_tokens` tokens after `prompt` (generate.h), every rank
  /// agreeing on every token; rank 0's result (under MPI, this process's). Collective. With
  /// `warmup`, an untimed shorter run first, in the same group (RankGenerator::Run).
  virtual equarx::Status Generate(const std::vector<int32_t>& prompt, size_t new_tokens,
                                  const ReduceConfig& rc, bool warmup, GenerateResult* out) = 0;
  virtual int ranks() const = 0;
  /// GEMM threads each rank uses.
  virtual int threads_per_rank() const = 0;
  /// "in-process", or the MPI communicator's data path.
  virtual std::string transport() const = 0;
};

/// In-process tensor parallelism: N RankModels and N communicators in this process.
class InProcessRunner final : public Runner {
 public:
  equarx::Status Load(const GgufFile& file, const Config& config, int ranks);
  equarx::Status Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc, std::vector<float>* hidden,
                         RunStats* stats) override;
  equarx::Status LoadHead() override;
  equarx::Status Generate(const std::vector<int32_t>& prompt, size_t new_tokens, const ReduceConfig& rc,
                          bool warmup, GenerateResult* out) override;
  /// Generate with each rank's reducer made by `make` (tests), over a group of `ranks()`.
  using ReducerFactory = std::function<Reducer(equarx::tools::World& rank)>;
  equarx::Status Generate(const std::vector<int32_t>& prompt, size_t new_tokens, const ReduceConfig& rc,
                          const ReducerFactory& make, GenerateResult* out, bool warmup = false);
  /// Rank r's generator (after Generate: its last step's logits slice; tests).
  const RankGenerator& generator(int r) const { return *gens_[r]; }
  const LmHead& head(int r) const { return *heads_[r]; }
  int ranks() const override { return static_cast<int>(models_.size()); }
  /// The cores divided among the ranks, at least 1.
  int threads_per_rank() const override;
  std::string transport() const override { return "in-process"; }

 private:
  const GgufFile* file_ = nullptr;
  std::vector<std::unique_ptr<RankModel>> models_;
  std::vector<std::unique_ptr<equarx::Communicator>> comms_;
  std::vector<std::unique_ptr<LmHead>> heads_;
  std::vector<std::unique_ptr<RankGenerator>> gens_;
};

/// Rank r of n's slice of the vocabulary for the LM head: [vocab r / n, vocab (r + 1) / n).
void VocabSlice(int vocab, int rank, int ranks, size_t* v0, size_t* v1);

int HardwareThreads();

}  // namespace gemma3
