// mpi_runner.h — one tensor-parallel rank per MPI process (equarx-gemma3 under mpirun).
//
// Every process maps the same GGUF file, loads only its own shard (rank = its rank in
// MPI_COMM_WORLD, ranks = the world size) and sums activations through an equarx
// communicator created over MPI_COMM_WORLD; the data path (MPI point-to-point or equarx's
// own TCP connections) comes from EQUARX_DATA_PATH. MPI itself carries only the set-up and
// the per-pass statistics (one barrier before each pass, three small reductions after it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runner.h"

namespace gemma3 {

/// MPI_Init_thread on construction, MPI_Finalize on destruction (no-op without MPI).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  bool ok() const { return ok_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  bool ok_ = false;
  int rank_ = 0, size_ = 1;
};

class MpiRunner final : public Runner {
 public:
  /// Loads this process's shard and creates the communicator (collective). `threads` GEMM
  /// threads for this rank; 0: the cores divided among the ranks on this host.
  bool Load(const GgufFile& file, const Config& config, int threads, std::string* error);
  /// Collective. stats: total_s the slowest rank's, reduce_s the mean, ranks_agree compares
  /// a hash of every rank's output.
  bool Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc, std::vector<float>* hidden,
               RunStats* stats, std::string* error) override;
  int ranks() const override { return size_; }
  int rank() const { return rank_; }
  int threads_per_rank() const override { return threads_; }
  std::string transport() const override { return transport_; }

 private:
  std::unique_ptr<RankModel> model_;
  std::unique_ptr<equarx::Communicator> comm_;
  int rank_ = 0, size_ = 1, threads_ = 1;
  std::string transport_;
};

}  // namespace gemma3
