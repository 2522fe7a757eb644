// A bounded reader over a fuzz input (libFuzzer's bytes): fixed-width integers that read as 0
// past the end, and the rest of the input as a byte range. The harnesses use it to pick their
// configuration from the first bytes, so that every configuration is reachable by mutation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace equarx::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  template <typename T>
  T Take() {
    T v{};
    const size_t k = sizeof(T) < n_ - pos_ ? sizeof(T) : n_ - pos_;
    std::memcpy(&v, p_ + pos_, k);
    pos_ += k;
    return v;
  }
  /// A value in [lo, hi] (inclusive) from the next 4 bytes.
  uint32_t Range(uint32_t lo, uint32_t hi) { return lo + Take<uint32_t>() % (hi - lo + 1); }
  const uint8_t* rest() const { return p_ + pos_; }
  size_t remaining() const { return n_ - pos_; }
  std::string RestAsString() const { return std::string(reinterpret_cast<const char*>(rest()), remaining()); }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

/// A harness's own invariant failed: print why and abort (libFuzzer records the input).
[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
  std::abort();
}

}  // namespace equarx::fuzz
