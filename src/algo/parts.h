// equarx parts: one kernel call's elements cut into parts on the codec threads' pool (option
// `threads`, RunArgs::pool). A call on n elements is split only when every part gets at least
// kMinPartElems elements; below that (or without a pool) it runs whole on the calling thread.
// Parts start on multiples of `granule` (whole blocks for the codec: codec::PartGranule), so
// each part can write its own bytes of the same wire image (codec::PartOf).
#pragma once

#include <algorithm>
#include <cstddef>

#include "algo/partition.h"
#include "common/worker_pool.h"
#include "equarx/options.h"

namespace equarx::algo {

/// Below this many elements per part a kernel call is not split.
inline constexpr size_t kMinPartElems = 16384;

/// How many parts a call on n elements is cut into (1: not split).
inline size_t PartCount(const common::WorkerPool* pool, size_t n) {
  if (!pool) return 1;
  return std::max<size_t>(1, std::min({size_t(pool->threads()), n / kMinPartElems, size_t(kMaxThreads)}));
}

/// fn(part, i) for part i of `parts` (PartCount) of the n elements, on the pool; empty parts
/// are skipped. With one part, fn({0, n}, 0) on this thread.
template <class Fn>
void ForEachPart(common::WorkerPool* pool, size_t granule, size_t n, size_t parts, Fn&& fn) {
  if (parts < 2) return fn(Range{0, n}, size_t(0));
  pool->Run(parts, [&](size_t i) {
    const Range p = SplitBlocks(Range{0, n}, granule, parts, i);
    if (p.count) fn(p, i);
  });
}

}  // namespace equarx::algo
