// The hot path of a warm call allocates nothing: after a first call of a shape (which may grow
// the communicator's scratch and build auto's table), further calls of that shape make no heap
// allocation on any rank's thread, for the small-message schedules and the default call, in
// place and out of place, with and without the argument check, and for hierarchical. A global operator new that
// counts per thread is the oracle (its own binary, so no other test runs under it).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/oracle.h"

namespace {
thread_local size_t g_allocations = 0;
}  // namespace

void* operator new(size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace equarx::testing {
namespace {

// Three rounds of the call on every rank; per rank, the heap allocations of rounds 2 and 3
// (the first may grow the scratch and build auto's table). Fails the test if a call fails.
std::vector<size_t> WarmAllocations(std::vector<std::unique_ptr<Communicator>>& comms,
                                    const std::vector<Buffer>& in, size_t count, const AllReduceOptions& o,
                                    bool in_place) {
  auto out = in;
  std::vector<size_t> allocations(comms.size());
  for (int round = 0; round < 3; ++round) {
    auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
      const size_t r = size_t(c.rank());
      const void* send = in_place ? out[r].data() : in[r].data();
      const size_t before = g_allocations;
      const Status s = c.AllReduce(send, out[r].data(), count, in[r].dtype, o);
      if (round > 0) allocations[r] += g_allocations - before;
      return s;
    });
    for (const Status& s : st) EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return allocations;
}

TEST(HotPath, AWarmSmallCallAllocatesNothing) {
  {  // the counter sees an allocation (the oracle works), here a std::string past its buffer
    const size_t before = g_allocations;
    const std::string s(1000, 'x');
    ASSERT_EQ(g_allocations - before, 1u) << s.size();
  }
  constexpr size_t kCount = 1024;  // 4 KiB of f32
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(CreateInProcessGroup(4, &comms).ok());
  auto in = MakeInputs(4, kCount, DType::kFloat32, 3);
  for (Algorithm a : {Algorithm::kOneShotRaw, Algorithm::kOneShot, Algorithm::kAuto, Algorithm::kRing,
                      Algorithm::kTwoShot, Algorithm::kRecursiveDoubling})
    for (bool validate : {true, false})
      for (bool in_place : {false, true}) {
        AllReduceOptions o;
        o.algorithm = a;
        o.validate = validate;
        const std::vector<size_t> allocations = WarmAllocations(comms, in, kCount, o, in_place);
        for (size_t r = 0; r < allocations.size(); ++r)
          EXPECT_EQ(allocations[r], 0u) << AlgorithmName(a) << (validate ? " validate" : "")
                                        << (in_place ? " in place" : "") << " rank " << r;
      }
}

// hierarchical keeps its buffers, requests and message lists between calls: a warm call of
// 2 hosts of 2 ranks (virtual hosts, ranks_per_host) allocates nothing either, with one chunk
// a shard (1000 f32, a short last block) and with several (12 MiB: 6 chunks a shard).
TEST(HotPath, AWarmHierarchicalCallAllocatesNothing) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(CreateInProcessGroup(4, &comms).ok());
  for (size_t count : {size_t(1000), size_t(3) << 20}) {
    auto in = MakeInputs(4, count, DType::kFloat32, 5);
    for (bool in_place : {false, true}) {
      const std::vector<size_t> allocations =
          WarmAllocations(comms, in, count, HierarchicalOptions(Algorithm::kTwoShot, 2), in_place);
      for (size_t r = 0; r < allocations.size(); ++r)
        EXPECT_EQ(allocations[r], 0u) << "count " << count << (in_place ? " in place" : "") << " rank " << r;
    }
  }
}

}  // namespace
}  // namespace equarx::testing
