// The hot path of a warm call allocates nothing: after a first call of a shape (which may grow
// the communicator's scratch and build auto's table), further calls of that shape make no heap
// allocation on any rank's thread, for the small-message schedules and the default call, in
// place and out of place, with and without the argument check. A global operator new that
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
                      Algorithm::kTwoShot})
    for (bool validate : {true, false})
      for (bool in_place : {false, true}) {
        AllReduceOptions o;
        o.algorithm = a;
        o.validate = validate;
        auto out = in;
        std::vector<size_t> allocations(comms.size());
        for (int round = 0; round < 3; ++round) {
          auto st = tools::RunOnRanks(comms, [&](Communicator& c) {
            const size_t r = size_t(c.rank());
            const void* send = in_place ? out[r].data() : in[r].data();
            const size_t before = g_allocations;
            const Status s = c.AllReduce(send, out[r].data(), kCount, DType::kFloat32, o);
            if (round > 0) allocations[r] += g_allocations - before;
            return s;
          });
          for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.ToString();
        }
        for (size_t r = 0; r < allocations.size(); ++r)
          EXPECT_EQ(allocations[r], 0u) << AlgorithmName(a) << (validate ? " validate" : "")
                                        << (in_place ? " in place" : "") << " rank " << r;
      }
}

}  // namespace
}  // namespace equarx::testing
