// equarx tools — the error bound of every configuration (see error_bound.h).
//
// Let S_i = sum over ranks of |x_r[i]| and S_b the largest S_i of i's block (block grid
// anchored at element 0): no partial sum of i's block exceeds S_b in magnitude. One int8
// encode of a partial whose block maximum is A errs by at most A/254 per element (u = 1/254,
// plus the codec's documented slack); a partial that already carries error E has A <= S_b + E,
// so k encodes in series give E_k <= ((1+u)^k - 1) * S_b. A hop in the raw dtype rounds the
// partial (unit roundoff e: 2^-8 bf16, 2^-11 f16, 2^-24 f32), every f32 addition rounds by
// 2^-24. The semi-loop's two chains add their errors; a quantized all-gather adds one more
// encode; the result's conversion to the dtype rounds once more. Two-shot encodes each
// contribution once on its own scale: sum over ranks of u * blockmax. One-shot too (one_shot;
// one_shot_raw sends the inputs as they are), with no all-gather, and its N - 1 f32
// additions in rank order grow like a chain of N - 1 additions. recursive_doubling adds the
// same N contributions in f32, in a tree of log2 N (+ 1) levels: within the same chain's bound.
//
// With a rotation, per power-of-two piece of P = 2^k elements of a rotation block: the
// schedule runs on the rotated inputs y_r = rot(x_r) (computed in f32 exactly as the library
// does, by the reference), so its error e_j in the rotated domain is within the unrotated
// bound taken on those inputs. The result is inverse(sum + e): element i is off by
// inverse(e)_i, |inverse(e)_i| <= c * sum_j |e_j| with c = 2^-ceil(k/2), plus the f32 rounding
// of the two transforms ((k + 1) roundings each way, of magnitudes up to c * sum_j |y_j| on the
// way back and, carried back, sum_j |x_j| on the way in), plus the final rounding to the dtype.
#include "error_bound.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "algo/resolve.h"
#include "codec/codec.h"
#include "common/env.h"

namespace equarx::tools {
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

void PlainBound(const std::vector<const float*>& x, size_t count, const AllReduceOptions& o,
                DType dtype, double* bound) {
  const int n = int(x.size());
  std::vector<double> s(count, 0.0);
  for (const float* b : x)
    for (size_t i = 0; i < count; ++i) s[i] += std::fabs(double(b[i]));
  const size_t B = o.block;
  std::vector<double> sb(count, 0.0);
  for (size_t b0 = 0; b0 < count; b0 += B) {
    const size_t b1 = std::min(count, b0 + B);
    const double m = *std::max_element(s.begin() + long(b0), s.begin() + long(b1));
    std::fill(sb.begin() + long(b0), sb.begin() + long(b1), m);
  }
  // Two-shot and one-shot: sum over ranks of each rank's own block maximum (each contribution
  // is encoded once, on its own scale).
  const bool one_shot = o.algorithm == Algorithm::kOneShot || o.algorithm == Algorithm::kOneShotRaw ||
                        o.algorithm == Algorithm::kRecursiveDoubling;
  std::vector<double> summax;
  if (o.algorithm == Algorithm::kTwoShot || o.algorithm == Algorithm::kOneShot) {
    summax.assign(count, 0.0);
    for (const float* b : x)
      for (size_t b0 = 0; b0 < count; b0 += B) {
        const size_t b1 = std::min(count, b0 + B);
        double m = 0;
        for (size_t i = b0; i < b1; ++i) m = std::max(m, std::fabs(double(b[i])));
        for (size_t i = b0; i < b1; ++i) summax[i] += m;
      }
  }
  const double e = UnitRoundoff(dtype);
  const double add = 0x1p-23;                // f32 additions, with margin
  const double u = EncodeErrorPerAbsmax(o);  // one encode, per unit of the block's absmax
  const bool quantized = IsQuantized(o.algorithm);
  const bool rs_q = quantized && o.algorithm != Algorithm::kNaiveFp8 && (one_shot || o.phases != Phases::kAG);
  const bool ag_q = quantized && o.algorithm != Algorithm::kNaiveFp8 && !one_shot && o.phases != Phases::kRS;
  int chains[2] = {n - 1, 0};
  if (o.algorithm == Algorithm::kSemi) chains[0] = n / 2, chains[1] = (n - 1) / 2;
  if (o.algorithm == Algorithm::kTwoShot || one_shot) chains[0] = 0;  // one encode per contribution

  for (size_t i = 0; i < count; ++i) {
    double E = 0;
    if (o.algorithm == Algorithm::kNaiveFp8) {
      // Cast of every contribution, every hop and the final rounding, 2^-3 relative each.
      bound[i] = Grow(2 * n + 1, 0x1p-3 + add, s[i]) * 1.01;
      continue;
    }
    if ((o.algorithm == Algorithm::kTwoShot || one_shot) && rs_q) E = u * summax[i];
    // one_shot: N decoded contributions added in f32, in rank order (no hop rounds them).
    if (one_shot) E += Grow(n - 1, add, s[i] + E);
    for (int c : chains) {
      if (c <= 0) continue;
      E += rs_q ? Grow(c, u + add, sb[i]) : Grow(c, (o.f32_partials ? 0x1p-24 : e) + add, s[i]);
    }
    E += add * (s[i] + E) * 2;  // owner's additions
    if (ag_q) E += u * (sb[i] + E);
    E += e * (s[i] + E);  // conversion of the result to the dtype
    bound[i] = E * 1.01 + 1e-30;
  }
}

void RotatedBound(const std::vector<const float*>& x, size_t count, uint64_t offset,
                  const AllReduceOptions& o, DType dtype, double* bound) {
  const size_t B = RotationBlockOf(o);
  const codec::RotationSpec spec{uint32_t(B), o.seed};
  std::vector<std::vector<float>> rotated(x.size(), std::vector<float>(count));
  std::vector<const float*> y(x.size());
  std::vector<double> absx(count, 0.0), absy(count, 0.0);
  for (size_t r = 0; r < x.size(); ++r) {
    codec::ref::RotateForward(spec, DType::kFloat32, x[r], count, offset, rotated[r].data());
    y[r] = rotated[r].data();
    for (size_t i = 0; i < count; ++i) {
      absx[i] += std::fabs(double(x[r][i]));
      absy[i] += std::fabs(double(y[r][i]));
    }
  }
  AllReduceOptions plain = o;
  plain.rotation = Rotation::kNone;
  std::vector<double> inner(count);
  PlainBound(y, count, plain, dtype, inner.data());
  const double e = UnitRoundoff(dtype);
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
}

}  // namespace

double EncodeErrorPerAbsmax(const AllReduceOptions& o) {
  // Nearest: half a code step at the top of the range (int: 1/(2Q); fp8: 2^-(mantissa bits+1)
  // of the value, at most of the absmax), with slack for the f32 scale and product roundings.
  // Stochastic: less than one step, with slack for floor(y + u) rounding y + u in f32.
  // A bf16 scale is the f32 scale rounded up by less than 2^-7 of itself: the code step, and
  // so the error of every integer code, grows by that factor.
  const bool sr = o.rounding == Rounding::kStochastic;
  // Two-level: each sub-block's step is at most the block's bf16 step (c <= 15), so the same.
  const double scale = o.scale != ScaleFormat::kF32 ? 1 + 0x1p-7 : 1.0;
  const double near = (1 + 0x1p-18) * scale, stoch = (1 + 0x1p-14) * scale;
  // From the codec's row of the block format table: integer codes have spacing s = a / Q,
  // a float code with m mantissa bits a relative spacing 2^-m.
  const codec::BlockFormatInfo& f = codec::BlockInfoOf(o.codec);
  if (f.mbits > 0) return std::ldexp(near, -int(f.mbits) - 1);
  return sr ? stoch / f.q : near / (2.0 * f.q);
}

double FlaggedBlockFactor(Codec c) {
  const codec::BlockFormatInfo& f = codec::BlockInfoOf(c);
  return double(f.q) / double(f.q_flag);
}

AllReduceOptions WithCodecDefaults(const AllReduceOptions& o) {
  AllReduceOptions r = o;
  r.scale = ScaleOf(o);
  r.block = BlockOf(o);
  return r;
}

bool RotationApplies(const AllReduceOptions& o, int ranks) {
  if (ranks < 2 || o.algorithm == Algorithm::kNaiveFp8) return false;
  if (o.rotation == Rotation::kHadamard) return true;
  return o.rotation == Rotation::kDefault && DefaultRotation(o.codec) == Rotation::kHadamard &&
         IsQuantized(o.algorithm);
}

AllReduceOptions ResolveForBound(const AllReduceOptions& o, DType dtype, size_t count, int ranks,
                                 uint32_t hosts) {
  AllReduceOptions r = WithCodecDefaults(o);
  const env::Settings env = env::Read();
  if (r.ranks_per_host == 0 && hosts > 1) r.ranks_per_host = hosts;  // the communicator's layout
  if (o.algorithm == Algorithm::kHierarchical) {  // its inner plans: see HierarchicalBound
    r.ranks_per_host = algo::ResolveDefaults(r, env).ranks_per_host;  // EQUARX_RANKS_PER_HOST
    return r;
  }
  if (ranks < 2) return r;
  // The library's resolver decides the plan (auto's table: the tune file, else the cost
  // model's on the environment's network) and the rotation.
  algo::AutoTables tables(env);
  algo::Resolved res;
  if (!algo::Resolve({r, dtype, count, ranks}, env, &tables, &res).ok() || count == 0) return r;
  r.algorithm = res.plan.algorithm;
  r.phases = res.plan.phases;
  r.rotation = res.rotate ? Rotation::kHadamard : Rotation::kNone;
  return r;
}

// Algorithm hierarchical (src/algo/hierarchical.cc): the host sums, formed as the schedule
// forms them (f32 in local-rank order, rounded to the dtype), carry the inner algorithm's
// bound; the sums' own rounding adds |exact - sum of the host sums|, computed exactly. An
// inner `auto` may pick any flat plan per shard: the largest of their bounds.
void HierarchicalBound(const std::vector<const float*>& x, size_t count, uint64_t offset,
                       const AllReduceOptions& o, DType dtype, double* bound) {
  const int n = int(x.size()), per_host = std::max(1, int(o.ranks_per_host));
  std::vector<std::vector<float>> sums;
  std::vector<uint8_t> rounded(count * DTypeSize(dtype));
  for (int first = 0; first < n; first += per_host) {
    std::vector<float> acc(x[size_t(first)], x[size_t(first)] + count);
    for (int r = first + 1; r < std::min(n, first + per_host); ++r)
      for (size_t i = 0; i < count; ++i) acc[i] = acc[i] + x[size_t(r)][i];
    codec::Convert(DType::kFloat32, acc.data(), count, dtype, rounded.data());
    codec::Convert(dtype, rounded.data(), count, DType::kFloat32, acc.data());
    sums.push_back(std::move(acc));
  }
  std::fill(bound, bound + count, 0.0);
  if (sums.size() > 1) {
    std::vector<const float*> hs;
    for (const auto& v : sums) hs.push_back(v.data());
    std::vector<AllReduceOptions> inner;
    if (o.inner != Algorithm::kAuto) {
      inner.push_back(o);
      inner.back().algorithm = o.inner;
    } else {
      for (Algorithm a : {Algorithm::kRing, Algorithm::kFull, Algorithm::kFullBidir,
                          Algorithm::kSemi, Algorithm::kTwoShot})
        for (Phases ph : {Phases::kRS, Phases::kAG, Phases::kRSAG}) {
          inner.push_back(o);
          inner.back().algorithm = a;
          inner.back().phases = ph;
        }
    }
    std::vector<double> b(count);
    for (const AllReduceOptions& io : inner) {
      ErrorBound(hs, count, offset, io, dtype, b.data());
      for (size_t i = 0; i < count; ++i) bound[i] = std::max(bound[i], b[i]);
    }
  }
  for (size_t i = 0; i < count; ++i) {
    double exact = 0, host = 0;
    for (int r = 0; r < n; ++r) exact += double(x[size_t(r)][i]);
    for (const auto& v : sums) host += double(v[i]);
    bound[i] += std::fabs(exact - host);
  }
}

void ErrorBound(const std::vector<const float*>& x, size_t count, uint64_t offset,
                const AllReduceOptions& o, DType dtype, double* bound) {
  if (count == 0) return;
  if (o.block == 0 || o.scale == ScaleFormat::kDefault)
    return ErrorBound(x, count, offset, WithCodecDefaults(o), dtype, bound);
  if (o.algorithm == Algorithm::kHierarchical) return HierarchicalBound(x, count, offset, o, dtype, bound);
  if (RotationApplies(o, int(x.size()))) return RotatedBound(x, count, offset, o, dtype, bound);
  PlainBound(x, count, o, dtype, bound);
}

void ConservationBound(const std::vector<double>& mag, int ranks, size_t rotation_block, double* bound) {
  const size_t count = mag.size();
  if (rotation_block == 0) {  // about 4N f32 roundings of values up to mag, doubled
    for (size_t i = 0; i < count; ++i) bound[i] = 8.0 * (ranks + 1) * 0x1p-24 * mag[i];
    return;
  }
  // Rotated: the transforms' f32 roundings spread over each block.
  for (size_t b0 = 0; b0 < count; b0 += rotation_block) {
    const size_t b1 = std::min(count, b0 + rotation_block);
    double m = 0;
    for (size_t i = b0; i < b1; ++i) m += mag[i];
    for (size_t i = b0; i < b1; ++i) bound[i] = 64 * 0x1p-24 * (mag[i] + m / 8) + 1e-30;
  }
}

size_t CountOutsideBound(const std::vector<const float*>& x, size_t count, uint64_t offset,
                         const AllReduceOptions& o, DType dtype, const double* exact,
                         const float* got) {
  std::vector<double> bound(count);
  ErrorBound(x, count, offset, o, dtype, bound.data());
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double g = double(got[i]);
    wrong += !std::isfinite(g) || std::fabs(g - exact[i]) > bound[i];
  }
  return wrong;
}

}  // namespace equarx::tools
