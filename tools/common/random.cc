// equarx tools — deterministic data generators (see random.h).
#include "random.h"

#include <cmath>

namespace equarx::tools {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// Independent keys per (seed, stream, purpose), so e.g. spike positions and base values of
// the heavy-tailed distribution are uncorrelated.
uint64_t StreamKey(uint64_t seed, uint64_t stream, uint64_t purpose) {
  return Mix64(Mix64(seed ^ 0x5EEDF00DCAFEBABEull) + Mix64(stream + 0x1000) * 3 + purpose * 0xA24BAED4963EE407ull);
}

// Element i of N(0,1): pair i/2 of Box-Muller, cosine branch for even i, sine for odd.
double NormalAt(uint64_t key, uint64_t i) {
  const uint64_t pair = i >> 1;
  const double u1 = (double((CounterRandom(key, 2 * pair) >> 11) + 1)) * 0x1.0p-53;  // (0, 1]
  const double u2 = ToUnit(CounterRandom(key, 2 * pair + 1));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = kTwoPi * u2;
  return (i & 1) ? r * std::sin(t) : r * std::cos(t);
}

}  // namespace

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  for (int i = 0; i < 4; ++i) s_[i] = CounterRandom(seed, uint64_t(i));
}

uint64_t Xoshiro256::Next() {
  const auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::string_view DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kNormal: return "normal";
    case Distribution::kUniform: return "uniform";
    case Distribution::kHeavyTailed: return "heavy";
    case Distribution::kInteger: return "integer";
  }
  return "unknown";
}

std::optional<Distribution> ParseDistribution(std::string_view n) {
  if (n == "normal" || n == "gaussian") return Distribution::kNormal;
  if (n == "uniform") return Distribution::kUniform;
  if (n == "heavy" || n == "heavy_tailed" || n == "llm") return Distribution::kHeavyTailed;
  if (n == "integer" || n == "int") return Distribution::kInteger;
  return std::nullopt;
}

double HeavyTailedChannelScale(uint64_t seed, size_t col) {
  const uint64_t key = StreamKey(seed, ~0ull, 7);  // independent of the stream (rank)
  const uint64_t r = CounterRandom(key, col);
  // 0.5% of the channels: top 0.005 of the 64-bit range.
  if (ToUnit(r) >= 0.005) return 1.0;
  return 50.0 + 50.0 * ToUnit(CounterRandom(key ^ 0x0DDBA11ull, col));
}

void Generate(const GenSpec& spec, size_t offset, size_t n, float* out) {
  const uint64_t key = StreamKey(spec.seed, spec.stream, 1);
  switch (spec.dist) {
    case Distribution::kNormal:
      for (size_t j = 0; j < n; ++j) out[j] = float(NormalAt(key, offset + j));
      return;
    case Distribution::kUniform:
      for (size_t j = 0; j < n; ++j) out[j] = float(2.0 * ToUnit(CounterRandom(key, offset + j)) - 1.0);
      return;
    case Distribution::kInteger: {
      const uint64_t span = uint64_t(2 * int64_t(spec.int_range) + 1);
      for (size_t j = 0; j < n; ++j) {
        // Multiply-shift maps 64 random bits to [0, span) (bias < 2^-40 for small spans).
        const uint64_t hi = uint64_t((unsigned __int128)CounterRandom(key, offset + j) * span >> 64);
        out[j] = float(int64_t(hi) - spec.int_range);
      }
      return;
    }
    case Distribution::kHeavyTailed: {
      const size_t cols = spec.cols ? spec.cols : 1;
      const uint64_t spike_key = StreamKey(spec.seed, spec.stream, 2);
      for (size_t j = 0; j < n; ++j) {
        const size_t i = offset + j;
        double v = NormalAt(key, i) * HeavyTailedChannelScale(spec.seed, i % cols);
        const uint64_t s = CounterRandom(spike_key, i);
        if (ToUnit(s) < 1e-4) {
          const double mag = 100.0 + 900.0 * ToUnit(Mix64(s));
          v = (s & 1) ? -mag : mag;
        }
        out[j] = float(v);
      }
      return;
    }
  }
}

}  // namespace equarx::tools
