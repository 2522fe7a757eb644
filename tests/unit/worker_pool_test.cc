// The worker pool behind the codec threads: every part of every job runs exactly once, on
// the caller and the workers, whatever the number of parts against threads; a job after
// thousands of others still sees all its parts; destroying a pool joins its idle workers.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <mutex>
#include <vector>

#include "common/worker_pool.h"

namespace equarx::common {
namespace {

TEST(WorkerPool, EveryPartRunsOnceForAnyPartsAndThreads) {
  for (int threads : {1, 2, 3, 5}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (size_t parts : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(7), size_t(64)}) {
      for (int job = 0; job < 200; ++job) {
        std::vector<std::atomic<int>> hits(parts);
        pool.Run(parts, [&](size_t i) { hits[i].fetch_add(1); });
        for (size_t i = 0; i < parts; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << parts;
      }
    }
  }
}

TEST(WorkerPool, PartsRunOnSeveralThreads) {
  WorkerPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Parts that wait for each other can only finish if at least two threads run them.
  for (int job = 0; job < 20; ++job) {
    std::atomic<int> arrived{0};
    pool.Run(2, [&](size_t) {
      arrived.fetch_add(1);
      while (arrived.load() < 2) std::this_thread::yield();
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_GE(ids.size(), 2u);
  EXPECT_TRUE(ids.count(std::this_thread::get_id()));  // the caller takes parts too
}

TEST(WorkerPool, ManyShortJobs) {
  WorkerPool pool(4);
  std::atomic<uint64_t> sum{0};
  for (int job = 0; job < 20000; ++job) pool.Run(4, [&](size_t i) { sum.fetch_add(i + 1); });
  EXPECT_EQ(sum.load(), 20000u * 10u);
}

}  // namespace
}  // namespace equarx::common
