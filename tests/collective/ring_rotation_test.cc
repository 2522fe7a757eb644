// The unquantized ring (and `auto` where it picks the ring) with rotation = hadamard at block
// sizes that are not multiples of 64, within the rotated error bound. Regression: the ring's
// partition used a fixed 64-element granule, so with blocks of 48 or 100 its segments cut
// rotation blocks in two and the results left the bound (found by equarx-perf's #wrong,
// which counts elements outside the bound: tests/tools/e2e_test.cc, PerfTool).
#include <gtest/gtest.h>

#include <string>

#include "support/harness.h"
#include "support/oracle.h"

namespace equarx::testing {
namespace {

TEST(RingRotation, AnyBlockSizeWithinBoundAndIdenticalOnEveryRank) {
  for (Algorithm a : {Algorithm::kRing, Algorithm::kAuto})
    for (size_t block : {size_t(16), size_t(48), size_t(100), size_t(128), size_t(1000)})
      for (int n : {2, 3, 5})
        for (size_t count : {size_t(10007), size_t(3) * 4096}) {
          const DType dt = count % 2 ? DType::kBFloat16 : DType::kFloat32;
          auto in = MakeInputs(n, count, dt, 31 + block + count);
          for (Buffer& b : in)
            for (size_t i = 0; i < count; i += 97) b.Set(i, b.Get(i) * 80.0);  // outliers
          AllReduceOptions o;
          o.algorithm = a;
          o.rotation = Rotation::kHadamard;
          o.block = block;
          o.seed = 3;
          ExpectAgreeAndWithinBound(in, ReduceAll(in, o, count % 2 == 0), o,
                                    FormatNonDefaultOptions(o) + " n=" + std::to_string(n) +
                                        " count=" + std::to_string(count));
        }
}

}  // namespace
}  // namespace equarx::testing
