// equarx partition maths: how a tensor is cut into regions, shards (one per rank) and
// microshards (the unit of overlap), always along the block grid.
//
// The block grid is anchored at element 0 of the whole tensor: block j covers elements
// [j*B, (j+1)*B). Every cut falls on a block boundary, so a block never straddles two
// messages and a block's scale depends only on its own elements. Only the tensor's last block
// may be short. Parts are as equal as whole blocks allow: part i of P gets blocks
// [floor(i*nb/P), floor((i+1)*nb/P)).
#pragma once

#include <cstddef>

namespace equarx::algo {

/// Elements [begin, begin + count) of the tensor.
struct Range {
  size_t begin = 0;
  size_t count = 0;
  size_t end() const { return begin + count; }
};

/// Part `i` of `parts` of `r` (which starts on a block boundary), cut into whole blocks.
Range SplitBlocks(Range r, size_t block, size_t parts, size_t i);

/// ((a % n) + n) % n for possibly negative a.
inline int Mod(long a, int n) {
  long m = a % n;
  return int(m < 0 ? m + n : m);
}

}  // namespace equarx::algo
