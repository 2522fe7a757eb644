// equarx scratch: per-communicator memory reused across calls.
//
// Grow-only: a call asks for what it needs, and memory is allocated only when a call needs
// more than any call before it. Wire buffers are 64-byte aligned. Memory is touched when it
// is allocated, so that the resident set reflects the high-water mark at once instead of
// creeping up later as a part first used by a rare call is paged in (docs/reliability.md,
// "Soak").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace equarx::algo {

class Scratch {
 public:
  /// At least `bytes` bytes, 64-byte aligned; contents undefined.
  uint8_t* Bytes(size_t bytes) {
    if (bytes > capacity_) {
      storage_.reset();  // the old block goes first: never both at once
      storage_.reset(new uint8_t[bytes + 64]);
      std::memset(storage_.get(), 0, bytes + 64);
      capacity_ = bytes;
    }
    auto p = reinterpret_cast<uintptr_t>(storage_.get());
    return reinterpret_cast<uint8_t*>((p + 63) & ~uintptr_t(63));
  }
  /// `n` requests and a live flag for each, all flags cleared.
  transport::Request* Requests(size_t n, uint8_t** live) {
    if (requests_.size() < n) {
      requests_.resize(n);
      live_.resize(n);
    }
    std::fill(live_.begin(), live_.begin() + long(n), uint8_t(0));
    *live = live_.data();
    return requests_.data();
  }
  size_t capacity() const { return capacity_; }

 private:
  std::unique_ptr<uint8_t[]> storage_;
  size_t capacity_ = 0;
  std::vector<transport::Request> requests_;
  std::vector<uint8_t> live_;
};

}  // namespace equarx::algo
