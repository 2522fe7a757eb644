// mpi_soak's calls (soak_calls.h): the draw of each call, its inputs and its checker.
#include "soak_calls.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "error_bound.h"
#include "half.h"

namespace equarx::soak {
namespace {

// The dtype's values as f32.
void ToF32(DType t, const uint8_t* src, size_t n, float* dst) {
  if (t == DType::kFloat32) std::memcpy(dst, src, n * 4);
  else if (t == DType::kBFloat16) tools::BF16ToF32Array(reinterpret_cast<const uint16_t*>(src), n, dst);
  else tools::F16ToF32Array(reinterpret_cast<const uint16_t*>(src), n, dst);
}

template <typename T>
T Pick(tools::Xoshiro256& g, std::initializer_list<T> v) {
  return v.begin()[g.Next() % v.size()];
}

}  // namespace

Draw DrawCall(const Settings& s, uint64_t call, int ranks) {
  tools::Xoshiro256 g(tools::Mix64(s.seed * 0x9E3779B97F4A7C15ull ^ tools::Mix64(call + 1)));
  Draw d;
  d.dtype = Pick(g, {DType::kFloat32, DType::kBFloat16, DType::kFloat16});
  const double lb = std::log(double(s.max_bytes));
  const size_t bytes = std::clamp<size_t>(size_t(std::exp(g.NextUnit() * lb)), 1, s.max_bytes);
  d.count = std::max<size_t>(1, bytes / DTypeSize(d.dtype));
  size_t n = 0;
  const EnumInfo* algos = AlgorithmTable(&n);
  AllReduceOptions& o = d.o;
  o.algorithm = Algorithm(algos[g.Next() % n].id);
  const EnumInfo* codecs = CodecTable(&n);
  o.codec = Codec(codecs[g.Next() % n].id);
  o.phases = Pick(g, {Phases::kRS, Phases::kAG, Phases::kRSAG});
  o.block = Pick<size_t>(g, {16, 32, 64, 64, 96, 128, 256, 1024, 4096});
  o.scale = Pick(g, {ScaleFormat::kF32, ScaleFormat::kBF16});
  // Stochastic rounding mostly where it is valid (integer codecs); rarely elsewhere, refused.
  const double sr = g.NextUnit();
  if (SupportsStochasticRounding(o.codec) ? sr < 0.25 : sr < 0.01) o.rounding = Rounding::kStochastic;
  o.rotation = Pick(g, {Rotation::kDefault, Rotation::kNone, Rotation::kHadamard});
  o.seed = g.Next();
  o.microshards = g.NextUnit() < 0.75 ? 0 : size_t(1 + g.Next() % 8);
  o.quantize_min_bytes = g.NextUnit() < 0.8 ? 0 : Pick<size_t>(g, {1024, 65536, size_t(1) << 20});
  o.f32_partials = g.NextUnit() < 0.25;
  if (o.algorithm == Algorithm::kHierarchical) {
    o.inner = Pick(g, {Algorithm::kRing, Algorithm::kFull, Algorithm::kFullBidir, Algorithm::kSemi,
                       Algorithm::kTwoShot, Algorithm::kAuto});
    o.ranks_per_host = uint32_t(1 + g.Next() % uint64_t(ranks));
  }
  // Mostly valid combinations: rotation hadamard is refused with naive_fp8 and, for f16 data,
  // where a chosen plan has an unquantized f16 hop; keep about one in ten of those.
  const bool keep_refusable = g.NextUnit() < 0.1;
  if (!keep_refusable && o.rotation == Rotation::kHadamard) {
    if (o.algorithm == Algorithm::kNaiveFp8 || o.algorithm == Algorithm::kRing) o.rotation = Rotation::kNone;
    if (d.dtype == DType::kFloat16) {
      o.phases = Phases::kRSAG;
      o.quantize_min_bytes = 0;
      if (o.algorithm == Algorithm::kHierarchical && o.inner == Algorithm::kRing) o.inner = Algorithm::kFull;
      if (o.algorithm == Algorithm::kHierarchical || o.algorithm == Algorithm::kAuto)
        o.rotation = Rotation::kDefault;  // their plans (small shards) may pick the f16 ring
    }
  }
  d.in_place = g.NextUnit() < 0.5;
  d.gen.dist = Pick(g, {tools::Distribution::kNormal, tools::Distribution::kUniform,
                        tools::Distribution::kHeavyTailed, tools::Distribution::kInteger});
  d.gen.seed = g.Next();
  d.gen.cols = Pick<size_t>(g, {64, 1000, 4096});
  d.gen.int_range = Pick(g, {1, 8, 100});
  d.scale_exp = int(g.Next() % 7) - 3;
  return d;
}

std::string Describe(const Draw& d, uint64_t call) {
  return "call=" + std::to_string(call) + " dtype=" + std::string(DTypeName(d.dtype)) +
         " count=" + std::to_string(d.count) + " in_place=" + std::to_string(int(d.in_place)) +
         " data=" + std::string(tools::DistributionName(d.gen.dist)) + " data_seed=" +
         std::to_string(d.gen.seed) + " scale=2^" + std::to_string(d.scale_exp) + " options=" +
         FormatOptions(d.o);
}

size_t ResidentKib() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return size_t(resident) * size_t(sysconf(_SC_PAGESIZE)) / 1024;
}


void Bases::Build(const Draw& d) {
  for (size_t r = 0; r < f.size(); ++r) {
    tools::GenSpec g = d.gen;
    g.stream = uint64_t(r);
    float* v = f[r].data();
    tools::Generate(g, 0, kBase, v);
    const float k = std::ldexp(1.0f, d.scale_exp);
    for (size_t i = 0; i < kBase; ++i) v[i] *= k;
    if (d.dtype == DType::kBFloat16) {
      tools::F32ToBF16Array(v, kBase, h[r].data());
      tools::BF16ToF32Array(h[r].data(), kBase, v);
    } else if (d.dtype == DType::kFloat16) {
      tools::F32ToF16Array(v, kBase, h[r].data());
      tools::F16ToF32Array(h[r].data(), kBase, v);
    }
  }
}

void Bases::Input(const Draw& d, int r, size_t off, size_t n, float* out, uint8_t* wire) const {
  const size_t cols = d.gen.cols, rows = kBase / cols, es = DTypeSize(d.dtype);
  const uint64_t key = tools::Mix64(d.gen.seed ^ tools::Mix64(uint64_t(r) + 0xba5e));
  const float* vf = f[size_t(r)].data();
  const uint16_t* vh = h[size_t(r)].data();
  for (size_t i = off, end = off + n; i < end;) {
    const size_t row = i / cols, col = i % cols, len = std::min(cols - col, end - i);
    const size_t src = (row < rows ? row : tools::Mix64(key ^ row) % rows) * cols + col;
    if (out) std::memcpy(out + (i - off), vf + src, len * 4);
    if (wire) {
      if (d.dtype == DType::kFloat32) std::memcpy(wire + (i - off) * 4, vf + src, len * 4);
      else std::memcpy(wire + (i - off) * es, vh + src, len * 2);
    }
    i += len;
  }
}

uint64_t Checker::Check(const Draw& d, const Bases& in, const AllReduceOptions& ob, const uint8_t* out, int me,
               size_t budget, uint64_t call_key, uint64_t* checked) {
  const size_t unit = (kUnit + ob.block - 1) / ob.block * ob.block;
  const size_t units = (d.count + unit - 1) / unit;
  const size_t cap = budget == 0 ? units : std::max<size_t>(1, budget / unit) * size_t(ranks);
  std::vector<size_t> pick;  // at most `cap` units: small, and sized by the call's draw
  if (units <= cap) {
    for (size_t u = size_t(me); u < units; u += size_t(ranks)) pick.push_back(u);
  } else {
    const double frac = tools::ToUnit(tools::Mix64(call_key));
    for (size_t j = size_t(me); j < cap; j += size_t(ranks)) {
      const size_t u = j + 1 == cap ? units - 1 : size_t((double(j) + frac) * double(units) / double(cap));
      pick.push_back(std::min(u, units - 1));
    }
  }
  uint64_t wrong = 0;
  const size_t es = DTypeSize(d.dtype);
  for (size_t u : pick) {
    const size_t off = u * unit, n = std::min(unit, d.count - off);
    std::fill(exact.begin(), exact.begin() + long(n), 0.0);
    for (int r = 0; r < ranks; ++r) {
      in.Input(d, r, off, n, x[size_t(r)].data(), nullptr);
      for (size_t i = 0; i < n; ++i) exact[i] += double(x[size_t(r)][i]);
    }
    ToF32(d.dtype, out + off * es, n, got.data());
    wrong += tools::CountOutsideBound(xp, n, off, ob, d.dtype, exact.data(), got.data());
    *checked += n;
  }
  return wrong;
}

}  // namespace equarx::soak
