// Partition maths: parts cover the range exactly, in order, on block boundaries.
#include "algo/partition.h"

#include <gtest/gtest.h>

namespace equarx::algo {
namespace {

TEST(Partition, PartsTileTheRangeOnBlockBoundaries) {
  for (size_t block : {1, 32, 64, 4096})
    for (size_t begin_blocks : {0, 3})
      for (size_t count : {0, 1, 31, 64, 65, 1000, 123457})
        for (size_t parts : {1, 2, 3, 7, 8, 64}) {
          Range r{begin_blocks * block, count};
          size_t next = r.begin, largest = 0, smallest = SIZE_MAX;
          for (size_t i = 0; i < parts; ++i) {
            Range p = SplitBlocks(r, block, parts, i);
            ASSERT_EQ(p.begin, next) << "gap or overlap";
            if (p.count && p.end() != r.end()) ASSERT_EQ(p.count % block, 0u);
            ASSERT_EQ(p.begin % block, 0u);
            next = p.end();
            largest = std::max(largest, p.count);
            smallest = std::min(smallest, p.count);
          }
          ASSERT_EQ(next, r.end());
          ASSERT_LE(largest - std::min(largest, smallest), block) << "parts differ by more than a block";
        }
}

TEST(Partition, Mod) {
  EXPECT_EQ(Mod(-1, 5), 4);
  EXPECT_EQ(Mod(-10, 5), 0);
  EXPECT_EQ(Mod(12, 5), 2);
}

}  // namespace
}  // namespace equarx::algo
