// equarx tools — deterministic, platform-independent test data.
//
// Every element is a pure function of (seed, stream, element index): a counter-based
// splitmix64 stream feeds our own Box-Muller transform (std::normal_distribution differs
// between standard libraries, this does not). Because elements are independent of how an
// array is cut, generators can fill chunks in parallel and produce identical bytes.
// Convention in the tools: `stream` = rank, so every rank gets different data from one seed.
//
// Distributions:
//   kNormal       N(0,1)
//   kUniform      uniform in [-1, 1)
//   kHeavyTailed  "LLM activation" style: N(0,1), plus ~0.5% outlier channels (columns,
//                 chosen from the seed alone so all ranks share them, as in tensor-parallel
//                 partial sums) scaled x50..x100, plus rare spikes (1e-4 of elements)
//                 of magnitude 100..1000
//   kInteger      integers uniform in [-int_range, int_range] (exact in every dtype for
//                 small ranges; the unquantized path must then sum exactly)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace equarx::tools {

/// splitmix64 finaliser: a bijective 64-bit mix.
uint64_t Mix64(uint64_t x);

/// The i-th output of the counter-based stream identified by `key`.
inline uint64_t CounterRandom(uint64_t key, uint64_t i) {
  return Mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull);
}

/// Uniform double in [0, 1) with 53 random bits.
inline double ToUnit(uint64_t x) { return double(x >> 11) * 0x1.0p-53; }

/// Classic xoshiro256** generator seeded through splitmix64, for sequential uses.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t Next();
  double NextUnit() { return ToUnit(Next()); }

 private:
  uint64_t s_[4];
};

enum class Distribution : uint8_t { kNormal, kUniform, kHeavyTailed, kInteger };

std::string_view DistributionName(Distribution d);  ///< "normal", "uniform", "heavy", "integer"
std::optional<Distribution> ParseDistribution(std::string_view name);

struct GenSpec {
  Distribution dist = Distribution::kNormal;
  uint64_t seed = 1;
  uint64_t stream = 0;   ///< e.g. the rank
  size_t cols = 4096;    ///< row length, for kHeavyTailed's outlier channels
  int int_range = 8;     ///< kInteger: values in [-int_range, int_range]
};

/// out[j] <- element (offset + j) of the array described by spec, j < n.
void Generate(const GenSpec& spec, size_t offset, size_t n, float* out);

/// Whether column `col` is an outlier channel of kHeavyTailed data with this seed, and its
/// scale (1 for ordinary channels).
double HeavyTailedChannelScale(uint64_t seed, size_t col);

}  // namespace equarx::tools
