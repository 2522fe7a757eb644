// The randomized Walsh-Hadamard rotation (codec.h, "Rotation"):
//   - the scalar reference against an independent f64 oracle that builds the signed Hadamard
//     matrix entry by entry (H[i][j] = (-1)^popcount(i & j)), on every piece layout;
//   - inverse(forward(x)) = x up to f32 rounding, for every dtype, block size and tail;
//   - every SIMD target bitwise equal to the reference, forward and inverse, every dtype,
//     block sizes {16, 32, 64, 128, 256, 4096, odd}, tails, offsets and in-place calls, on
//     Gaussian data and on data with signed zeros, subnormals and exact cancellations;
//   - SafeToRotate on NaN, Inf and huge values in the vector body and in the tail;
//   - the guarded rotation (spec.guard): the forward pass writes exactly the blocks that
//     SafeToRotate refuses as NaN and says so, the inverse reports NaN/Inf among its f32
//     results (also where only its own butterflies overflow), every SIMD target equal to the
//     reference in bits and in what it reports; without guard neither happens.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "per_target.h"

namespace equarx::codec {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16};
const uint32_t kBlocks[] = {16, 32, 64, 128, 256, 4096, 96, 100, 33, 1000};

std::vector<uint8_t> Gaussian(DType t, size_t n, std::mt19937& rng, float outlier = 0.0f) {
  std::normal_distribution<float> nd;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = nd(rng) * (i % 37 == 5 ? 1.0f + outlier : 1.0f);
  std::vector<uint8_t> bytes(n * DTypeSize(t));
  ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
  return bytes;
}

// Gaussian data with edge values mixed in: signed zeros, subnormals, and runs of equal values
// whose butterflies cancel exactly (x - x = +0, -0 + -0 = -0): the cases where a kernel that
// reorders or fuses the reference's adds could differ in a bit the Gaussian data never sets.
std::vector<uint8_t> WithEdges(DType t, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(n);
  const float tiny = t == DType::kFloat16 ? 0x1p-20f : 0x1p-140f;  // subnormal in the dtype
  for (size_t i = 0; i < n; ++i) {
    switch (rng() % 6) {
      case 0: x[i] = 0.0f; break;
      case 1: x[i] = -0.0f; break;
      case 2: x[i] = (rng() % 2 ? tiny : -tiny) * float(1 + rng() % 7); break;
      case 3: x[i] = i > 0 ? x[i - 1] : 1.0f; break;
      default: x[i] = nd(rng);
    }
  }
  std::vector<uint8_t> bytes(n * DTypeSize(t));
  ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
  return bytes;
}

std::vector<float> AsF32(DType t, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> f(n);
  ref::Convert(t, bytes.data(), n, DType::kFloat32, f.data());
  return f;
}

// The f64 oracle of one rotation block (length len, block index b): signs, then each piece
// multiplied by its dense Hadamard matrix and 2^-floor(k/2).
std::vector<double> Oracle(const std::vector<float>& x, size_t len, uint64_t b, uint64_t seed) {
  std::vector<double> d(len), y(len, 0.0);
  for (size_t j = 0; j < len; ++j) {
    const bool flip = (RotationSignWord(seed, b, uint32_t(j / 64)) >> (j % 64)) & 1;
    d[j] = flip ? -double(x[j]) : double(x[j]);
  }
  size_t first = 0;
  for (int k = 62; k >= 0; --k) {
    const size_t p = size_t(1) << k;
    if (!(len & p)) continue;
    const double scale = std::ldexp(1.0, -(k / 2));
    for (size_t i = 0; i < p; ++i) {
      double acc = 0;
      for (size_t j = 0; j < p; ++j)
        acc += (std::popcount(i & j) % 2 ? -1.0 : 1.0) * d[first + j];
      y[first + i] = acc * scale;
    }
    first += p;
  }
  return y;
}

TEST(RotationReference, MatchesDenseOracle) {
  std::mt19937 rng(7);
  for (uint32_t B : {16u, 32u, 64u, 96u, 100u, 33u}) {
    for (size_t n : {size_t(B), size_t(3 * B), size_t(2 * B + 13), size_t(B / 2 + 1)}) {
      const auto bytes = Gaussian(DType::kFloat32, n, rng, 40.0f);
      const auto x = AsF32(DType::kFloat32, bytes, n);
      std::vector<float> y(n);
      const uint64_t offset = 5 * uint64_t(B);
      ref::RotateForward({B, 42}, DType::kFloat32, bytes.data(), n, offset, y.data());
      for (size_t s = 0; s < n; s += B) {
        const size_t len = std::min<size_t>(B, n - s);
        const std::vector<float> xs(x.begin() + long(s), x.begin() + long(s + len));
        const auto want = Oracle(xs, len, (offset + s) / B, 42);
        double norm = 0;
        for (double v : want) norm = std::max(norm, std::fabs(v));
        for (size_t j = 0; j < len; ++j)
          ASSERT_NEAR(y[s + j], want[j], 1e-5 * norm + 1e-30)
              << "B=" << B << " n=" << n << " element " << s + j;
      }
    }
  }
}

TEST(RotationReference, InverseUndoesForward) {
  std::mt19937 rng(11);
  for (DType t : kDTypes)
    for (uint32_t B : kBlocks)
      for (size_t n : {size_t(1), size_t(B - 1), size_t(B), size_t(B + 1), size_t(4 * B + 7)}) {
        const auto bytes = Gaussian(t, n, rng, 100.0f);
        const auto x = AsF32(t, bytes, n);
        std::vector<float> y(n), back(n);
        ref::RotateForward({B, 3}, t, bytes.data(), n, 0, y.data());
        ref::RotateInverse({B, 3}, y.data(), n, 0, DType::kFloat32, back.data());
        for (size_t s = 0; s < n; s += B) {
          const size_t len = std::min<size_t>(B, n - s);
          float m = 0;
          for (size_t j = 0; j < len; ++j) m = std::max(m, std::fabs(x[s + j]));
          // log2(P) butterfly levels each way, one f32 rounding each: generous 64 ulps of m.
          for (size_t j = 0; j < len; ++j)
            ASSERT_NEAR(back[s + j], x[s + j], 64 * std::ldexp(m, -23))
                << DTypeName(t) << " B=" << B << " n=" << n << " j=" << s + j;
        }
        // The norm is kept up to the documented factor 1 or 2 per piece (exactly, in f64).
        double nx = 0, ny = 0;
        for (size_t i = 0; i < n; ++i) nx += double(x[i]) * x[i], ny += double(y[i]) * y[i];
        EXPECT_GE(ny, nx * 0.999);
        EXPECT_LE(ny, nx * 2.001);
      }
}

TEST(RotationReference, RotationFlattensAnOutlier) {
  // One huge value in a block of Gaussians: after the rotation the block's max is close to
  // its RMS, which is the point of rotating before absmax quantization.
  std::vector<float> x(64, 0.0f);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  x[17] = 500.0f;
  std::vector<float> y(64);
  ref::RotateForward({64, 9}, DType::kFloat32, x.data(), 64, 0, y.data());
  float my = 0;
  double ss = 0;
  for (float v : y) my = std::max(my, std::fabs(v)), ss += double(v) * v;
  const double rms = std::sqrt(ss / 64);
  EXPECT_LT(my, 1.5 * rms);  // before: max / rms = 500 / (500 / 8) = 8
}

TEST(RotationReference, SignsDependOnSeedAndBlockOnly) {
  EXPECT_EQ(RotationSignWord(1, 2, 0), RotationSignWord(1, 2, 0));
  EXPECT_NE(RotationSignWord(1, 2, 0), RotationSignWord(2, 2, 0));
  EXPECT_NE(RotationSignWord(1, 2, 0), RotationSignWord(1, 3, 0));
  EXPECT_NE(RotationSignWord(1, 2, 0), RotationSignWord(1, 2, 1));
  // About half the signs are flipped.
  int ones = 0;
  for (uint64_t b = 0; b < 64; ++b) ones += std::popcount(RotationSignWord(5, b, 0));
  EXPECT_GT(ones, 64 * 64 / 2 - 200);
  EXPECT_LT(ones, 64 * 64 / 2 + 200);
}

TEST(RotationReference, SafeToRotate) {
  for (DType t : kDTypes)
    for (size_t n : {size_t(1), size_t(7), size_t(64), size_t(1000)}) {
      for (size_t at : {size_t(0), n / 2, n - 1}) {
        for (float bad : {NAN, INFINITY, -INFINITY, 0x1p101f}) {
          if (t == DType::kFloat16 && std::isfinite(bad)) continue;  // f16 cannot hold it
          std::vector<float> x(n, 1.5f);
          x[at] = bad;
          std::vector<uint8_t> bytes(n * DTypeSize(t));
          ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
          EXPECT_FALSE(ref::SafeToRotate(t, bytes.data(), n));
          EXPECT_FALSE(SafeToRotate(t, bytes.data(), n)) << DTypeName(t) << " n=" << n << " at=" << at;
        }
        std::vector<float> x(n, -0x1p99f);
        std::vector<uint8_t> bytes(n * DTypeSize(t));
        if (t == DType::kFloat16) std::fill(x.begin(), x.end(), 65504.0f);
        ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
        EXPECT_TRUE(ref::SafeToRotate(t, bytes.data(), n));
        EXPECT_TRUE(SafeToRotate(t, bytes.data(), n));
      }
    }
}

class RotationPerTarget : public PerTargetTest {};

TEST_P(RotationPerTarget, BitwiseEqualToReference) {
  std::mt19937 rng(uint32_t(uint64_t(GetParam()) * 13 + 5));
  for (DType t : kDTypes)
    for (uint32_t B : kBlocks)
      // 5000 + B / 2: longer than the kernel's 4096-element scratch and, at small blocks,
      // more than one batch of 64 sign words.
      for (size_t n : {size_t(1), size_t(B - 1), size_t(B), size_t(B + 1), size_t(3 * B + 5),
                       size_t(17 * B), size_t(5000 + B / 2)})
      for (bool edges : {false, true}) {
        const auto bytes = edges ? WithEdges(t, n, rng) : Gaussian(t, n, rng, 60.0f);
        const uint64_t offset = uint64_t(B) * (rng() % 1000);
        const std::string where = TargetName(GetParam()) + " " + std::string(DTypeName(t)) +
                                  " B=" + std::to_string(B) + " n=" + std::to_string(n) +
                                  (edges ? " edges" : "");
        std::vector<float> want(n), got(n);
        ref::RotateForward({B, 77}, t, bytes.data(), n, offset, want.data());
        RotateForward({B, 77}, t, bytes.data(), n, offset, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), n * 4)) << "forward " << where;
        std::vector<uint8_t> want_back(n * DTypeSize(t)), got_back(n * DTypeSize(t));
        ref::RotateInverse({B, 77}, want.data(), n, offset, t, want_back.data());
        RotateInverse({B, 77}, want.data(), n, offset, t, got_back.data());
        ASSERT_EQ(want_back, got_back) << "inverse " << where;
        if (t == DType::kFloat32) {  // in place
          std::vector<float> inplace = AsF32(t, bytes, n);
          RotateForward({B, 77}, t, inplace.data(), n, offset, inplace.data());
          ASSERT_EQ(0, std::memcmp(want.data(), inplace.data(), n * 4)) << "in place " << where;
          RotateInverse({B, 77}, inplace.data(), n, offset, t, inplace.data());
          ASSERT_EQ(0, std::memcmp(want_back.data(), inplace.data(), n * 4)) << "in place " << where;
        }
      }
}

TEST_P(RotationPerTarget, GuardedPoisonsExactlyTheUnsafeBlocksAndReportsNonFiniteResults) {
  std::mt19937 rng(uint32_t(uint64_t(GetParam()) * 7 + 3));
  for (DType t : kDTypes)
    for (uint32_t B : kBlocks)
      for (size_t n : {size_t(B - 1), size_t(3 * B + 5), size_t(17 * B)})
        for (int bad : {0, 1, 2, 3}) {  // none, NaN, Inf, 2^110 (f32/bf16; f16 has no 2^110)
          if (n == 0 || (bad == 3 && t == DType::kFloat16)) continue;
          auto bytes = Gaussian(t, n, rng, 10.0f);
          std::vector<size_t> at;
          if (bad != 0)
            for (size_t i : {size_t(0), n / 2, n - 1}) {  // first, middle and last block
              const float v = bad == 1 ? NAN : bad == 2 ? -INFINITY : 0x1p110f;
              ref::Convert(DType::kFloat32, &v, 1, t, bytes.data() + i * DTypeSize(t));
              at.push_back(i);
            }
          const RotationSpec guarded{B, 77, true}, plain{B, 77};
          const uint64_t offset = uint64_t(B) * (rng() % 1000);
          const std::string where = TargetName(GetParam()) + " " + std::string(DTypeName(t)) +
                                    " B=" + std::to_string(B) + " n=" + std::to_string(n) +
                                    " bad=" + std::to_string(bad);
          std::vector<float> want(n), got(n), unguarded(n);
          const bool want_p = ref::RotateForward(guarded, t, bytes.data(), n, offset, want.data());
          const bool got_p = RotateForward(guarded, t, bytes.data(), n, offset, got.data());
          ASSERT_EQ(want_p, got_p) << where;
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), n * 4)) << "forward " << where;
          ASSERT_EQ(want_p, bad != 0) << where;
          ASSERT_FALSE(RotateForward(plain, t, bytes.data(), n, offset, unguarded.data())) << where;
          for (size_t s = 0; s < n; s += B) {  // the refused blocks are NaN, the others rotated
            const size_t len = std::min<size_t>(B, n - s);
            const bool refused = !ref::SafeToRotate(t, bytes.data() + s * DTypeSize(t), len);
            for (size_t j = s; j < s + len; ++j) {
              if (refused) {
                ASSERT_EQ(std::bit_cast<uint32_t>(got[j]), 0x7FC00000u) << where << " element " << j;
              } else {
                ASSERT_EQ(std::bit_cast<uint32_t>(got[j]), std::bit_cast<uint32_t>(unguarded[j]))
                    << where << " element " << j;
              }
            }
          }
          // The inverse of the guarded output: NaN results exactly where a block was refused.
          std::vector<uint8_t> want_back(n * DTypeSize(t)), got_back(n * DTypeSize(t));
          const bool want_nf = ref::RotateInverse(guarded, got.data(), n, offset, t, want_back.data());
          const bool got_nf = RotateInverse(guarded, got.data(), n, offset, t, got_back.data());
          ASSERT_EQ(want_nf, got_nf) << where;
          ASSERT_EQ(want_back, got_back) << "inverse " << where;
          ASSERT_EQ(got_nf, bad != 0) << where;
          ASSERT_FALSE(RotateInverse(plain, got.data(), n, offset, t, got_back.data())) << where;
        }
}

TEST_P(RotationPerTarget, GuardedInverseReportsItsOwnOverflow) {
  // Finite inputs whose inverse butterflies overflow: the results are Inf/NaN, and the guarded
  // inverse must say so although nothing non-finite went in.
  for (uint32_t B : {16u, 64u, 128u, 100u}) {
    const size_t n = 3 * size_t(B);
    std::vector<float> y(n, 0x1.fffffep127f);
    std::vector<float> back(n);
    const RotationSpec guarded{B, 5, true};
    const bool want = ref::RotateInverse(guarded, y.data(), n, 0, DType::kFloat32, back.data());
    ASSERT_TRUE(want) << B;
    ASSERT_EQ(want, RotateInverse(guarded, y.data(), n, 0, DType::kFloat32, back.data()))
        << TargetName(GetParam()) << " B=" << B;
  }
}

EQUARX_INSTANTIATE_PER_TARGET(RotationPerTarget);

}  // namespace
}  // namespace equarx::codec
