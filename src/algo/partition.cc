// equarx partition maths (see partition.h).
#include "algo/partition.h"

namespace equarx::algo {

Range SplitBlocks(Range r, size_t block, size_t parts, size_t i) {
  const size_t nb = (r.count + block - 1) / block;
  // i * nb fits easily: nb < 2^58 for any real tensor and parts is small.
  const size_t b0 = i * nb / parts;
  const size_t b1 = (i + 1) * nb / parts;
  Range out;
  out.begin = r.begin + b0 * block;
  const size_t e = r.begin + b1 * block;
  const size_t end = e < r.end() ? e : r.end();
  out.count = end > out.begin ? end - out.begin : 0;
  if (out.begin > r.end()) out.begin = r.end();
  return out;
}

}  // namespace equarx::algo
