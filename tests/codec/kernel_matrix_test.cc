// The whole kernel matrix against the scalar reference, bit for bit, on every SIMD target the
// CPU supports: every block format x rounding (nearest; stochastic for int8/int4) x telemetry
// (off / on: the stats must match too) x scale storage (f32, bf16, two-level for int8/int4 at
// blocks that are a multiple of 16) x every block size we ship
// or that takes another code path {16, 32, 64, 128, 256, 4096} and odd ones {7, 100, 1000},
// for Encode, Decode (to every dtype), DecodeAccumulate and DecodeAccumulateEncode, on sizes
// that hit every remainder path, with blocks holding NaN/Inf (the flagged path), all-zero,
// tiny and huge blocks (data from MakeData below). No random draw decides what is covered.
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
constexpr uint32_t kBlocks[] = {16, 32, 64, 128, 256, 4096, 7, 100, 1000};

// n values of dtype t, one flavour per block of B (zero, tiny, NaN/Inf, huge, ties, any bits,
// sub-blocks of 8 at exponents 2^-9 .. 2^9 apart, plain Gaussians at a random exponent).
std::vector<uint8_t> MakeData(DType t, size_t n, size_t B, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(n);
  for (size_t begin = 0, k = 0; begin < n; begin += B, ++k) {
    const int kind = int(k % 9);
    const int e = int(rng() % 41) - 20;
    for (size_t i = begin; i < std::min(n, begin + B); ++i) {
      float v = std::ldexp(nd(rng), t == DType::kFloat16 ? e / 4 : e);
      switch (kind) {
        case 0: v = 0.0f; break;
        case 1: v = std::ldexp(nd(rng), -125); break;
        case 2: if (i % 7 == 3) v = NAN; break;
        case 3: if (i % 11 == 1) v = (i & 2) ? INFINITY : -INFINITY; break;
        case 4: if (t != DType::kFloat16) v = std::ldexp(nd(rng), 120); break;
        case 5: v = float(int(nd(rng) * 40)) + 0.5f; break;
        case 6: v = std::bit_cast<float>(uint32_t(rng())); break;
        case 7: v = std::ldexp(v, int((i / 8) % 7) * 3 - 9); break;  // sub-blocks of 8 apart
        default: break;
      }
      x[i] = v;
    }
  }
  std::vector<uint8_t> bytes(n * DTypeSize(t));
  ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
  return bytes;
}

struct Kind {
  Format format;
  uint8_t rounding;
};
// Every row of the block format table (a new format is covered without editing this test):
// nearest even, and stochastic rounding for integer codes.
std::vector<Kind> Kinds() {
  std::vector<Kind> kinds;
  for (const BlockFormatInfo& f : kBlockFormats) {
    kinds.push_back({f.format, kRoundNearestEven});
    if (f.mbits == 0) kinds.push_back({f.format, kRoundStochastic});
  }
  return kinds;
}

class KernelMatrix : public PerTargetTest {};

TEST_P(KernelMatrix, EveryFormatRoundingScaleBlockAndTelemetryPath) {
  std::mt19937 rng(uint32_t(uint64_t(GetParam()) * 7 + 3));
  for (const Kind& k : Kinds())
    for (uint8_t scale : {kScaleF32, kScaleBF16, kScaleTwoLevel})
      for (uint32_t B : kBlocks) {
        // Two-level scales: integer codes at blocks that are a multiple of 16.
        if (scale == kScaleTwoLevel && (BlockInfoOf(k.format)->mbits != 0 || B % 16 != 0))
          continue;
        WireSpec spec{k.format, B, k.rounding, rng(), rng(), (uint64_t(rng()) << 32) - 77};
        spec.scale = scale;
        std::vector<size_t> sizes = {1, B - 1, B, B + 1, 9 * size_t(B) + 5};
        // Two-level kernels encode runs of blocks up to the largest block (4096 elements):
        // several runs, blocks of every kind inside each.
        if (scale == kScaleTwoLevel && B <= 256) sizes.push_back(70 * size_t(B) + 5);
        for (size_t n : sizes) {
          if (n == 0) continue;
          for (DType t : kDTypes) {
            const std::string where = TargetName(GetParam()) + " " + FormatName(k.format) +
                                      (k.rounding ? " sr" : "") + (scale == kScaleBF16 ? " bf16-scale" : scale ? " two-level" : "") +
                                      " B=" + std::to_string(B) + " n=" + std::to_string(n) +
                                      " " + std::string(DTypeName(t));
            SCOPED_TRACE(where);
            const auto src = MakeData(t, n, B, rng), local = MakeData(t, n, B, rng);
            std::vector<uint8_t> w;  // the reference's wire, encoded without telemetry
            for (bool telemetry : {false, true}) {
              std::vector<uint8_t> wire;
              ASSERT_NO_FATAL_FAILURE(ExpectEncodeMatchesReference(spec, t, src.data(), n, telemetry, &wire));
              ASSERT_NO_FATAL_FAILURE(ExpectDecodeAccumulateEncodeMatchesReference(
                  spec, wire.data(), n, t, local.data(), telemetry));
              if (!telemetry) w = wire;
            }
            ASSERT_NO_FATAL_FAILURE(ExpectDecodeMatchesReference(spec, w.data(), n, t, local.data()));
          }
        }
      }
}

EQUARX_INSTANTIATE_PER_TARGET(KernelMatrix);

// The bf16 scale: two bytes per block, the f32 scale rounded up (no value exceeds the code
// range), decoding exactly what the f32-scale wire decodes up to that rounding.
TEST(ScaleStorage, Bf16ScaleIsTheF32ScaleRoundedUp) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  const size_t n = 4096;
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng) * 3.0f;
  for (Format f : {Format::kInt8Block, Format::kInt4Block, Format::kFp8E4M3Block}) {
    WireSpec a{f, 32}, b{f, 32};
    b.scale = kScaleBF16;
    EXPECT_EQ(WireBytes(b, n), WireBytes(a, n) - 2 * (n / 32));
    std::vector<uint8_t> wa(WireBytes(a, n)), wb(WireBytes(b, n));
    EncodeStats sa, sb;
    ref::Encode(a, DType::kFloat32, x.data(), n, wa.data(), &sa);
    ref::Encode(b, DType::kFloat32, x.data(), n, wb.data(), &sb);
    EXPECT_EQ(sb.clipped, 0u) << FormatName(f);
    for (size_t blk = 0; blk < n / 32; ++blk) {
      float s32, s16;
      std::memcpy(&s32, wa.data() + 4 * blk, 4);
      uint16_t h;
      std::memcpy(&h, wb.data() + 2 * blk, 2);
      s16 = std::bit_cast<float>(uint32_t(h) << 16);
      EXPECT_GE(s16, s32);
      EXPECT_LE(s16, s32 * (1.0f + 1.0f / 128)) << blk;
    }
    std::vector<float> ya(n), yb(n);
    ref::Decode(a, wa.data(), n, DType::kFloat32, ya.data());
    ref::Decode(b, wb.data(), n, DType::kFloat32, yb.data());
    double ea = 0, eb = 0;
    for (size_t i = 0; i < n; ++i) ea += std::pow(ya[i] - x[i], 2), eb += std::pow(yb[i] - x[i], 2);
    EXPECT_LT(eb, ea * 1.05) << FormatName(f) << ": the coarser scale costs under 5% of MSE";
  }
}

}  // namespace
}  // namespace equarx::codec
