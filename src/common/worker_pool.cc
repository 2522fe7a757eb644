// equarx worker pool (worker_pool.h): one job at a time; parts are handed out under the mutex
// (a part is a whole kernel call of tens of microseconds or more, so the lock is not the cost).
#include "common/worker_pool.h"

namespace equarx::common {

WorkerPool::WorkerPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Worker(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  while (next_ < parts_) {
    const size_t i = next_++;
    const Thunk thunk = thunk_;
    void* ctx = ctx_;
    lock.unlock();
    thunk(ctx, i);
    lock.lock();
    if (++finished_ == parts_) done_.notify_all();
  }
}

void WorkerPool::RunErased(size_t parts, Thunk thunk, void* ctx) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    thunk_ = thunk;
    ctx_ = ctx;
    parts_ = parts;
    next_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  Drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == parts_; });
  // The job is over: no worker touches thunk_/ctx_ again (next_ == parts_ until the next job).
  parts_ = 0;
  next_ = 0;
  finished_ = 0;
}

void WorkerPool::Worker() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    Drain();
  }
}

}  // namespace equarx::common
