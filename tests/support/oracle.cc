// Test data and oracles (see oracle.h).
//
// Error bound. Let S_i = sum over ranks of |x_r[i]| and S_b the largest S_i of i's block
// (block grid anchored at element 0): no partial sum of i's block exceeds S_b in magnitude.
// One int8 encode of a partial whose block maximum is A errs by at most A/254 per element
// (u = 1/254, plus the codec's documented slack); a partial that already carries error E has
// A <= S_b + E, so k encodes in series give E_k <= ((1+u)^k - 1) * S_b. A hop in the raw
// dtype rounds the partial (unit roundoff e: 2^-8 bf16, 2^-11 f16, 2^-24 f32), every f32
// addition rounds by 2^-24. The semi-loop's two chains add their errors; a quantized
// all-gather adds one more encode; the result's conversion to the dtype rounds once more.
// Two-shot encodes each contribution once on its own scale: sum over ranks of u * blockmax.
#include "support/oracle.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codec/codec.h"

namespace equarx::testing {

uint64_t Rng::Next() {
  uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return double(Next() >> 11) * 0x1p-53; }

double Rng::Normal() {
  double u1 = Uniform(), u2 = Uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

double Buffer::Get(size_t i) const {
  switch (dtype) {
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      return f;
    }
    case DType::kBFloat16: {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      return codec::ref::BF16ToF32(h);
    }
    case DType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      return codec::ref::F16ToF32(h);
    }
  }
  return 0;
}

void Buffer::Set(size_t i, double v) {
  // f64 -> f32 -> dtype: exact for the values the tests use (already f32-representable or
  // drawn at random, where the double rounding does not matter).
  const float f = float(v);
  switch (dtype) {
    case DType::kFloat32: std::memcpy(bytes.data() + 4 * i, &f, 4); break;
    case DType::kBFloat16: {
      uint16_t h = codec::ref::F32ToBF16(f);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      break;
    }
    case DType::kFloat16: {
      uint16_t h = codec::ref::F32ToF16(f);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
      break;
    }
  }
}

std::vector<Buffer> MakeInputs(int ranks, size_t n, DType dtype, uint64_t seed, bool integers,
                               double scale) {
  std::vector<Buffer> in;
  for (int r = 0; r < ranks; ++r) {
    Rng rng(seed * 1000003ull + uint64_t(r));
    Buffer b(dtype, n);
    for (size_t i = 0; i < n; ++i)
      b.Set(i, integers ? double(int64_t(rng.Next() % 9) - 4) : rng.Normal() * scale);
    in.push_back(std::move(b));
  }
  return in;
}

std::vector<double> ExactSum(const std::vector<Buffer>& inputs) {
  std::vector<double> s(inputs.empty() ? 0 : inputs[0].size(), 0.0);
  for (const Buffer& b : inputs)
    for (size_t i = 0; i < s.size(); ++i) s[i] += b.Get(i);
  return s;
}

std::vector<double> ErrorBound(const std::vector<Buffer>& inputs, const AllReduceOptions& o,
                               DType dtype, uint32_t hosts) {
  const size_t count = inputs.empty() ? 0 : inputs[0].size();
  std::vector<std::vector<float>> f(inputs.size(), std::vector<float>(count));
  std::vector<const float*> x;
  for (size_t r = 0; r < inputs.size(); ++r) {
    for (size_t i = 0; i < count; ++i) f[r][i] = float(inputs[r].Get(i));  // exact: dtype -> f32
    x.push_back(f[r].data());
  }
  std::vector<double> bound(count);
  const AllReduceOptions resolved =
      tools::ResolveForBound(o, dtype, count, int(inputs.size()), hosts ? hosts : uint32_t(inputs.size()));
  tools::ErrorBound(x, count, 0, resolved, dtype, bound.data());
  return bound;
}

double MseAgainstRounded(const Buffer& result, const std::vector<double>& reference) {
  Buffer ref(result.dtype, reference.size());
  for (size_t i = 0; i < reference.size(); ++i) ref.Set(i, reference[i]);
  double acc = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double d = result.Get(i) - ref.Get(i);
    acc += d * d;
  }
  return reference.empty() ? 0 : acc / double(reference.size());
}

}  // namespace equarx::testing
