// mpi_runner.cc — see mpi_runner.h.
#include "mpi_runner.h"

#include <algorithm>
#include <cstdlib>

#ifdef EQUARX_HAVE_MPI
#include <mpi.h>

#include "job.h"
#include "stats.h"
#endif

namespace gemma3 {

#ifdef EQUARX_HAVE_MPI

// MPI's own steps end the job rather than wait forever on a stopped rank (tools/common/job.h).
using equarx::tools::MpiAllreduce;

bool MpiRunner::Load(const GgufFile& file, const Config& config, int threads,
                     equarx::tools::World* world, std::string* error) {
  world_ = world;
  rank_ = world->rank();
  size_ = world->size();
  if (threads <= 0) {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int on_host = local ? std::max(1, std::atoi(local)) : 1;
    threads = std::max(1, HardwareThreads() / on_host);
  }
  threads_ = threads;
  model_ = std::make_unique<RankModel>();
  std::string load_error;
  int ok = model_->Load(file, config, rank_, size_, &load_error) ? 1 : 0, all_ok = 0;
  // Plain MPI: loading may take any time, so no deadline fits (no collective has run yet).
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    *error = ok ? "model load failed on another rank" : "rank " + std::to_string(rank_) + ": " + load_error;
    return false;
  }
  transport_ = world->transport();
  return true;
}

bool MpiRunner::Forward(const std::vector<int32_t>& tokens, const ReduceConfig& rc,
                        std::vector<float>* hidden, RunStats* stats, std::string* error) {
  const size_t T = tokens.size(), d = static_cast<size_t>(model_->config().d_model);
  hidden->assign(T * d, 0.0f);
  Reducer red = MakeReducer(&world_->comm(), rc, error);
  ForwardStats fs;
  world_->Barrier();  // every rank starts the pass together
  int ok = model_->Forward(tokens.data(), T, red, threads_, hidden->data(), &fs) ? 1 : 0, all_ok = 0;
  equarx::tools::EndJobIfFailed(world_->comm());  // before MPI waits on a broken group
  MpiAllreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (error->empty()) *error = ok ? "forward failed on another rank" : "forward failed on rank " + std::to_string(rank_);
    return false;
  }
  if (stats) {
    double maxes[3] = {fs.total_s, fs.reduce_s, fs.flops}, sums[3] = {maxes[0], maxes[1], maxes[2]};
    world_->MaxInPlace(maxes, 3);
    world_->SumInPlace(sums, 3);
    uint64_t h = equarx::tools::Fnv1a64(hidden->data(), hidden->size() * sizeof(float)), hmin = 0, hmax = 0;
    MpiAllreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MpiAllreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    RunStats s;
    s.total_s = maxes[0];
    s.reduce_s = sums[1] / size_;
    s.gflops = s.total_s > 0 ? sums[2] / s.total_s * 1e-9 : 0;
    s.ranks_agree = hmin == hmax;
    *stats = s;
  }
  return true;
}

#else  // !EQUARX_HAVE_MPI

bool MpiRunner::Load(const GgufFile&, const Config&, int, equarx::tools::World*, std::string* error) {
  *error = "this build of equarx-gemma3 has no MPI (configure with EQUARX_ENABLE_MPI=ON)";
  return false;
}

bool MpiRunner::Forward(const std::vector<int32_t>&, const ReduceConfig&, std::vector<float>*, RunStats*,
                        std::string* error) {
  *error = "no MPI";
  return false;
}

#endif

}  // namespace gemma3
