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

namespace {

double UnitRoundoff(DType t) {
  switch (t) {
    case DType::kFloat32: return 0x1p-24;
    case DType::kBFloat16: return 0x1p-8;
    case DType::kFloat16: return 0x1p-11;
  }
  return 1;
}

// Error after k steps that each multiply the carried error by (1+f) and add f * mag.
double Grow(int k, double f, double mag) { return (std::pow(1.0 + f, k) - 1.0) * mag; }

}  // namespace

double EncodeErrorPerAbsmax(const AllReduceOptions& o) {
  // Nearest: half a code step at the top of the range (int: 1/(2Q); fp8: 2^-(mantissa bits+1)
  // of the value, at most of the absmax), with slack for the f32 scale and product roundings.
  // Stochastic: less than one step, with slack for floor(y + u) rounding y + u in f32.
  // A bf16 scale is the f32 scale rounded up by less than 2^-7 of itself: the code step, and
  // so the error of every integer code, grows by that factor.
  const bool sr = o.rounding == Rounding::kStochastic;
  const double scale = o.scale == ScaleFormat::kBF16 ? 1 + 0x1p-7 : 1.0;
  const double near = (1 + 0x1p-18) * scale, stoch = (1 + 0x1p-14) * scale;
  switch (o.codec) {
    case Codec::kInt8: return sr ? stoch / 127.0 : near / 254.0;
    case Codec::kInt4: return sr ? stoch / 7.0 : near / 14.0;
    case Codec::kFp8E4M3: return 0x1p-4 * near;
    case Codec::kFp8E5M2: return 0x1p-3 * near;
  }
  return 1.0;
}

double FlaggedBlockFactor(Codec c) {
  switch (c) {
    case Codec::kInt8: return 127.0 / 126.0;
    case Codec::kInt4: return 7.0 / 6.0;
    case Codec::kFp8E4M3: return 448.0 / 416.0;
    case Codec::kFp8E5M2: return 1.0;
  }
  return 1.0;
}

bool RotationApplies(const AllReduceOptions& o, int ranks) {
  if (ranks < 2 || o.algorithm == Algorithm::kNaiveFp8) return false;
  if (o.rotation == Rotation::kHadamard) return true;
  return o.rotation == Rotation::kDefault && DefaultRotation(o.codec) == Rotation::kHadamard &&
         IsQuantized(o.algorithm);
}

namespace {

// The bound of a rotated call (see ErrorBound). Per power-of-two piece of P = 2^k elements of
// a rotation block: the schedule runs on the rotated inputs y_r = rot(x_r) (computed in f32
// exactly as the library does, by the reference), so its error e_j in the rotated domain is
// within the unrotated bound taken on those inputs. The result is inverse(sum + e): element i
// is off by inverse(e)_i, |inverse(e)_i| <= c * sum_j |e_j| with c = 2^-ceil(k/2), plus the
// f32 rounding of the two transforms ((k + 1) roundings each way, of magnitudes up to
// c * sum_j |y_j| on the way back and, carried back, sum_j |x_j| on the way in), plus the
// final rounding to the dtype.
std::vector<double> RotatedBound(const std::vector<Buffer>& inputs, const AllReduceOptions& o,
                                 DType dtype);

}  // namespace

// The host sums of algorithm hierarchical, as src/algo/hierarchical.cc forms them.
std::vector<Buffer> HostSums(const std::vector<Buffer>& in, int per_host) {
  const int n = int(in.size());
  std::vector<Buffer> sums;
  for (int first = 0; first < n; first += per_host) {
    Buffer b(in[0].dtype, in[0].size());
    for (size_t i = 0; i < b.size(); ++i) {
      float acc = float(in[size_t(first)].Get(i));
      for (int r = first + 1; r < std::min(n, first + per_host); ++r) acc = acc + float(in[size_t(r)].Get(i));
      b.Set(i, double(acc));
    }
    sums.push_back(std::move(b));
  }
  return sums;
}

std::vector<double> ErrorBound(const std::vector<Buffer>& inputs, const AllReduceOptions& o,
                               DType dtype) {
  if (o.algorithm == Algorithm::kHierarchical && !inputs.empty()) {
    const std::vector<Buffer> sums = HostSums(inputs, std::max(1, int(o.ranks_per_host)));
    AllReduceOptions inner = o;
    inner.algorithm = o.inner;
    std::vector<double> bound(inputs[0].size(), 0.0);
    if (sums.size() > 1) bound = ErrorBound(sums, inner, dtype);
    const std::vector<double> exact = ExactSum(inputs), exact_sums = ExactSum(sums);
    for (size_t i = 0; i < bound.size(); ++i) bound[i] += std::fabs(exact[i] - exact_sums[i]);
    return bound;
  }
  if (RotationApplies(o, int(inputs.size())) && !inputs.empty() && inputs[0].size() > 0)
    return RotatedBound(inputs, o, dtype);
  const int n = int(inputs.size());
  const size_t count = inputs.empty() ? 0 : inputs[0].size();
  std::vector<double> s(count, 0.0);
  for (const Buffer& b : inputs)
    for (size_t i = 0; i < count; ++i) s[i] += std::fabs(b.Get(i));
  const size_t B = o.block;
  std::vector<double> sb(count, 0.0);
  for (size_t b0 = 0; b0 < count; b0 += B) {
    const size_t b1 = std::min(count, b0 + B);
    const double m = *std::max_element(s.begin() + long(b0), s.begin() + long(b1));
    std::fill(sb.begin() + long(b0), sb.begin() + long(b1), m);
  }
  // Two-shot: sum over ranks of each rank's own block maximum (each contribution is encoded
  // once, on its own scale).
  std::vector<double> summax(count, 0.0);
  if (o.algorithm == Algorithm::kTwoShot)
    for (const Buffer& b : inputs)
      for (size_t b0 = 0; b0 < count; b0 += B) {
        const size_t b1 = std::min(count, b0 + B);
        double m = 0;
        for (size_t i = b0; i < b1; ++i) m = std::max(m, std::fabs(b.Get(i)));
        for (size_t i = b0; i < b1; ++i) summax[i] += m;
      }
  const double e = UnitRoundoff(dtype);
  const double add = 0x1p-23;                     // f32 additions, with margin
  const double u = EncodeErrorPerAbsmax(o);  // one encode, per unit of the block's absmax
  const bool quantized = IsQuantized(o.algorithm);
  const bool rs_q = quantized && o.algorithm != Algorithm::kNaiveFp8 && o.phases != Phases::kAG;
  const bool ag_q = quantized && o.algorithm != Algorithm::kNaiveFp8 && o.phases != Phases::kRS;
  int chains[2] = {n - 1, 0};
  if (o.algorithm == Algorithm::kSemi) chains[0] = n / 2, chains[1] = (n - 1) / 2;

  std::vector<double> bound(count);
  for (size_t i = 0; i < count; ++i) {
    double E = 0;
    if (o.algorithm == Algorithm::kNaiveFp8) {
      // Cast of every contribution, every hop and the final rounding, 2^-3 relative each.
      E = Grow(2 * n + 1, 0x1p-3 + add, s[i]);
      bound[i] = E * 1.01;
      continue;
    }
    if (o.algorithm == Algorithm::kTwoShot) {
      chains[0] = 0;  // no chain: one encode per contribution, then the owner's sum
      if (rs_q) E = u * summax[i];
    }
    for (int c : chains) {
      if (c <= 0) continue;
      E += rs_q ? Grow(c, u + add, sb[i]) : Grow(c, (o.f32_partials ? 0x1p-24 : e) + add, s[i]);
    }
    E += add * (s[i] + E) * 2;  // owner's additions
    if (ag_q) E += u * (sb[i] + E);
    E += e * (s[i] + E);  // conversion of the result to the dtype
    bound[i] = E * 1.01 + 1e-30;
  }
  return bound;
}

namespace {

std::vector<double> RotatedBound(const std::vector<Buffer>& inputs, const AllReduceOptions& o,
                                 DType dtype) {
  const size_t count = inputs[0].size();
  const size_t B = o.block;
  const codec::RotationSpec spec{uint32_t(B), o.seed};
  std::vector<Buffer> rotated;
  std::vector<double> absx(count, 0.0), absy(count, 0.0);
  for (const Buffer& b : inputs) {
    Buffer y(DType::kFloat32, count);
    codec::ref::RotateForward(spec, b.dtype, b.data(), count, 0, static_cast<float*>(y.data()));
    for (size_t i = 0; i < count; ++i) {
      absx[i] += std::fabs(b.Get(i));
      absy[i] += std::fabs(y.Get(i));
    }
    rotated.push_back(std::move(y));
  }
  AllReduceOptions plain = o;
  plain.rotation = Rotation::kNone;
  const std::vector<double> inner = ErrorBound(rotated, plain, dtype);
  const double e = UnitRoundoff(dtype);
  std::vector<double> bound(count);
  for (size_t b0 = 0; b0 < count; b0 += B) {
    const size_t len = std::min(B, count - b0);
    size_t first = 0;
    for (int k = 62; k >= 0; --k) {
      const size_t p = size_t(1) << k;
      if (!(len & p)) continue;
      const double c = std::ldexp(1.0, -((k + 1) / 2));
      const double round = double(k + 1) * 0x1p-23;
      double se = 0, sy = 0, sx = 0;
      for (size_t j = b0 + first; j < b0 + first + p; ++j) se += inner[j], sy += absy[j], sx += absx[j];
      const double E = c * (se + round * (sy + se)) + round * sx;
      for (size_t j = b0 + first; j < b0 + first + p; ++j)
        bound[j] = (E + e * (absx[j] + E)) * 1.01 + 1e-30;
      first += p;
    }
  }
  return bound;
}

}  // namespace

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
