// equarx tools — the ranks of a run, in-process threads or MPI processes, behind one interface
// (barrier, max/sum reductions, a broadcast), so a measuring loop is written once; and
// RunOnRanks, the one launcher of ranks as threads: the in-process worlds of equarx-perf and
// equarx-tune, InProcessGroup (group.h: equarx-reduce, -accuracy, -demo), the tests and
// equarx-gemma3's in-process ranks all start their threads here.
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

/// How RunOnRanks starts its threads.
struct RankStart {
  /// Hold every thread until all have started, then release them together, so that what runs
  /// (and `seconds`) does not include thread start-up.
  bool together = false;
  /// If set: the wall time from the start (with `together`, the common release) to the last
  /// rank done.
  double* seconds = nullptr;
};

/// Runs fn(r) for every rank r in [0, n), each on its own thread, and returns what each
/// returned, indexed by rank.
std::vector<Status> RunOnRanks(int n, const std::function<Status(int rank)>& fn,
                               const RankStart& start = {});

/// The same over the communicators of a group: fn(*comms[r]) on rank r's thread.
std::vector<Status> RunOnRanks(std::vector<std::unique_ptr<Communicator>>& comms,
                               const std::function<Status(Communicator&)>& fn,
                               const RankStart& start = {});

/// The first failing rank's status in rank order (its message prefixed "rank R: " with
/// `name_rank`), or ok.
Status FirstFailure(const std::vector<Status>& ranks, bool name_rank = false);

/// Runs body(world) on `ranks` threads of an in-process group.
Status RunInProcess(int ranks, const std::function<void(World&)>& body);

/// Initializes MPI (threads funneled: only the calling thread calls MPI), creates a
/// communicator over MPI_COMM_WORLD with the data path of the environment (EQUARX_DATA_PATH),
/// runs body(world) once in this process, waits for every rank and finalizes. Unsupported if
/// this build has no MPI.
Status RunMpi(int* argc, char*** argv, const std::function<void(World&)>& body);

}  // namespace equarx::tools
