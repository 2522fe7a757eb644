// equarx hash of bytes: 64-bit FNV-1a, for values every rank computes alike and compares (a
// table's text, a call's descriptor). Not for anything a peer could choose to collide.
#pragma once

#include <cstddef>
#include <cstdint>

namespace equarx::common {

inline uint64_t Fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace equarx::common
