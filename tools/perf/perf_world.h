// equarx-perf's view of the ranks: in-process threads or MPI processes behind one interface
// (barrier, max/sum reductions, a broadcast), so the measuring loop is written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "equarx/communicator.h"

namespace equarx::perf {

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

/// Runs body(world) on `ranks` threads of an in-process group.
Status RunInProcess(int ranks, const std::function<void(World&)>& body);

/// Initializes MPI, runs body(world) once in this process, finalizes. Unsupported if this
/// build has no MPI.
Status RunMpi(int* argc, char*** argv, const std::function<void(World&)>& body);

}  // namespace equarx::perf
