// equarx worker pool: a fixed set of threads that run the parts of one kernel call with the
// calling thread (fork-join). Created once per communicator (option `threads`), reused by
// every call; the hot path allocates nothing.
//
// Run(parts, fn) calls fn(i) once for every i in [0, parts) on the caller and the workers and
// returns when all calls have returned. Which thread runs which part is not fixed, so fn must
// give the same result whichever thread runs it (the codec parts do: each writes its own
// bytes). Idle workers sleep on a condition variable: no spinning that would steal a core
// from the codec or the network stack. One caller at a time (a communicator's thread).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace equarx::common {

class WorkerPool {
 public:
  /// `threads` >= 1 threads in all: the caller plus threads - 1 workers.
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }

  template <class Fn>
  void Run(size_t parts, Fn&& fn) {
    if (parts == 0) return;
    if (parts == 1 || workers_.empty()) {
      for (size_t i = 0; i < parts; ++i) fn(i);
      return;
    }
    RunErased(parts, [](void* f, size_t i) { (*static_cast<Fn*>(f))(i); }, &fn);
  }

 private:
  using Thunk = void (*)(void*, size_t);
  void RunErased(size_t parts, Thunk thunk, void* ctx);
  void Worker();
  // Takes the next part of the current job until none is left.
  void Drain();

  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;  // a new job bumps it
  bool stop_ = false;
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  size_t parts_ = 0, next_ = 0, finished_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace equarx::common
