// Helpers of the codec tests: encode / decode an f32 vector with the scalar reference.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/codec.h"

namespace equarx::codec {

inline std::vector<uint8_t> Enc(WireSpec spec, const std::vector<float>& x,
                                EncodeStats* st = nullptr) {
  std::vector<uint8_t> w(WireBytes(spec, x.size()));
  ref::Encode(spec, DType::kFloat32, x.data(), x.size(), w.data(), st);
  return w;
}

inline std::vector<float> Dec(WireSpec spec, const std::vector<uint8_t>& w, size_t n) {
  std::vector<float> y(n);
  ref::Decode(spec, w.data(), n, DType::kFloat32, y.data());
  return y;
}

}  // namespace equarx::codec
