// equarx tools — the ranks of a run, in-process threads or MPI processes, behind one interface
// (barrier, max/sum reductions, a broadcast), so a measuring loop is written once: the world
// launcher of equarx-perf, equarx-tune, the tests' thread harness and equarx-gemma3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "equarx/communicator.h"

namespace equarx::tools {

class World {
 public:
  virtual ~World() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Communicator& comm() = 0;
  virtual void Barrier() = 0;
  /// Element-wise max / sum over ranks, result on every rank.
  virtual void MaxInPlace(double* v, size_t n) = 0;
  virtual void SumInPlace(double* v, size_t n) = 0;
  virtual void BroadcastFromRoot(uint64_t* v) = 0;
  /// MPI_Allreduce(SUM) of f32 for the `mpi` peer; false when not under MPI.
  virtual bool MpiAllreduceF32(const float* send, float* recv, size_t count) = 0;
  virtual std::string transport() const = 0;
};

/// Runs fn(comm) for every communicator of an in-process group, each on its own thread, and
/// returns what each returned, indexed by rank.
std::vector<Status> RunOnRanks(std::vector<std::unique_ptr<Communicator>>& comms,
                               const std::function<Status(Communicator&)>& fn);

/// Runs body(world) on `ranks` threads of an in-process group.
Status RunInProcess(int ranks, const std::function<void(World&)>& body);

/// Initializes MPI (threads funneled: only the calling thread calls MPI), creates a
/// communicator over MPI_COMM_WORLD with the data path of the environment (EQUARX_DATA_PATH),
/// runs body(world) once in this process, waits for every rank and finalizes. Unsupported if
/// this build has no MPI.
Status RunMpi(int* argc, char*** argv, const std::function<void(World&)>& body);

}  // namespace equarx::tools
