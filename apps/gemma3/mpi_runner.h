// mpi_runner.h — one tensor-parallel rank per MPI process (equarx-gemma3 under mpirun).
//
// Every process maps the same GGUF file, loads only its own shard (rank = its rank in
// MPI_COMM_WORLD, ranks = the world size) and sums activations through the communicator of
// the tools' MPI world (tools/common/world.h, tools::RunMpi: created over MPI_COMM_WORLD; the
// data path, MPI point-to-point or equarx's own TCP connections, from EQUARX_DATA_PATH), or,
// with ReduceConfig::mpi_allreduce, through MPI_Allreduce (the Open MPI baseline of the same
// calls). Otherwise MPI carries only the set-up, the per-pass statistics (one barrier before
// each pass, three small reductions after it) and generate's token exchange.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runner.h"
#include "world.h"

namespace gemma3 {

/// Under mpirun, rank 0's `ok` on every rank, through plain MPI (no deadline: the other ranks
/// wait while rank 0 does work of any length, such as generate's exact run).
bool RootVerdict(bool ok);

class MpiRunner final : public Runner {
 public:
  /// Loads this process's shard (collective) and sums over the world's communicator. `threads`
  /// GEMM threads for this rank; 0: the cores divided among the ranks on this host.
  equarx::Status Load(const GgufFile& file, const Config& config, int threads, equarx::tools::World* world);
  /// Collective. stats: total_s the slowest rank's, reduce_s the mean, ranks_agree compares
  /// a hash of every rank's output.
  equarx::Status Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc, std::vector<float>* hidden,
                         RunStats* stats) override;
  /// Collective: this process's slice of the LM head.
  equarx::Status LoadHead() override;
  /// Collective. The token exchange runs through the tools' MPI steps (job.h: a stopped rank
  /// ends the job); an equarx failure ends the job before it (EndJobIfFailed).
  equarx::Status Generate(const std::vector<int32_t>& prompt, size_t new_tokens, const ReduceConfig& rc,
                          bool warmup, GenerateResult* out) override;
  int ranks() const override { return size_; }
  int rank() const { return rank_; }
  int threads_per_rank() const override { return threads_; }
  std::string transport() const override { return transport_; }

 private:
  // This rank's reducer for rc: equarx over the world's communicator (why it failed, on rank
  // 0, in *why: MakeReducer), or MPI_Allreduce.
  Reducer MakeRankReducer(const ReduceConfig& rc, equarx::Status* why);

  const GgufFile* file_ = nullptr;
  std::unique_ptr<RankModel> model_;
  std::unique_ptr<LmHead> head_;
  std::unique_ptr<RankGenerator> gen_;
  equarx::tools::World* world_ = nullptr;
  int rank_ = 0, size_ = 1, threads_ = 1;
  std::string transport_;
};

}  // namespace gemma3
