// Every SIMD target the CPU supports (AvailableTargets) against the scalar reference, bit for
// bit: encoded bytes and decoded / accumulated values of every kernel, every dtype and every
// wire format (int8, int4, fp8 e4m3/e5m2, nearest and stochastic rounding, with and without
// telemetry, whose stats must match too), on sizes that hit every remainder path (0, 1, B-1, B, B+1, primes, ~100k),
// random block sizes (including ones longer than the fused kernel's stack tile), and data
// with NaN/Inf, all-zero, tiny, huge (overflowing sums) and wide-dynamic-range blocks.
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

// Restores the best target when a test ends, even on failure.
struct TargetGuard {
  ~TargetGuard() { ForceTarget(0); }
};

// n values of dtype t (as raw bytes), block-structured: each block of B gets its own flavour.
std::vector<uint8_t> MakeData(DType t, size_t n, size_t B, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> pick(0, 15), ed(-40, 40);
  std::vector<float> x(n);
  for (size_t begin = 0; begin < n; begin += B) {
    const int kind = pick(rng);
    const int e = t == DType::kFloat16 ? ed(rng) / 4 : ed(rng);
    for (size_t i = begin; i < std::min(n, begin + B); ++i) {
      float v = std::ldexp(nd(rng), e);
      switch (kind) {
        case 0: v = 0.0f; break;                                   // all-zero block
        case 1: v = std::ldexp(nd(rng), -125); break;              // tiny: flushed
        case 2: if (i % 7 == 3) v = NAN; break;                    // NaN inside
        case 3: if (i % 11 == 1) v = (i & 2) ? INFINITY : -INFINITY; break;
        case 4: v = std::ldexp(nd(rng), 126); break;               // huge (bf16/f32)
        case 5: v = float(int(nd(rng) * 40)) + 0.5f; break;        // many ties
        case 6: v = std::bit_cast<float>(uint32_t(rng())); break;  // any bit pattern
        default: break;
      }
      x[i] = v;
    }
  }
  std::vector<uint8_t> bytes(n * DTypeSize(t));
  ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
  return bytes;
}

std::vector<size_t> Sizes(size_t B) {
  return {0, 1, B - 1, B, B + 1, 2 * B + 3, 97, 1009, 7919, 100003};
}

const uint32_t kBlocks[] = {32, 64, 128, 100, 7, 256, 1000, 4096, 4097, 5000};

std::string Where(int64_t target, size_t B, size_t n, DType t) {
  return TargetName(target) + " B=" + std::to_string(B) + " n=" + std::to_string(n) +
         " dtype=" + std::string(DTypeName(t));
}

class PerTarget : public PerTargetTest {};

TEST_P(PerTarget, Int8KernelsMatchReference) {
  std::mt19937 rng(uint32_t(uint64_t(GetParam()) * 31 + 1));
  std::uniform_int_distribution<size_t> bpick(0, std::size(kBlocks) - 1);
  for (int round = 0; round < 3; ++round) {
    // The two block sizes with their own kernels (64, 128), then a random one.
    const uint32_t B = round == 0 ? 64 : round == 1 ? 128 : kBlocks[bpick(rng)];
    const WireSpec spec{Format::kInt8Block, B};
    for (size_t n : Sizes(B)) {
      for (DType t : kDTypes) {
        SCOPED_TRACE(Where(GetParam(), B, n, t));
        const std::vector<uint8_t> src = MakeData(t, n, B, rng);
        const std::vector<uint8_t> local = MakeData(t, n, B, rng);
        std::vector<uint8_t> w_ref;
        ASSERT_NO_FATAL_FAILURE(ExpectEncodeMatchesReference(spec, t, src.data(), n, false, &w_ref));
        // Decode to every dtype; DecodeAccumulate out of place, and in place for f32
        ASSERT_NO_FATAL_FAILURE(ExpectDecodeMatchesReference(spec, w_ref.data(), n, t, local.data()));
        if (t == DType::kFloat32) {
          std::vector<float> a_ref(n + 1, 7.0f), inplace = a_ref;
          ref::DecodeAccumulate(spec, w_ref.data(), n, t, local.data(), a_ref.data());
          if (n) std::memcpy(inplace.data(), local.data(), n * DTypeSize(t));
          DecodeAccumulate(spec, w_ref.data(), n, t, inplace.data(), inplace.data());
          ASSERT_EQ(0, std::memcmp(a_ref.data(), inplace.data(), 4 * (n + 1))) << "in place";
        }
        ASSERT_NO_FATAL_FAILURE(
            ExpectDecodeAccumulateEncodeMatchesReference(spec, w_ref.data(), n, t, local.data(), false));
      }
    }
  }
}

// Random codes and random scales (every third block flagged; with zero_scales every fifth
// scale 0) in a wire of n values of `format`, blocks of B: the decoding kernels against the
// reference.
void ExpectArbitraryWireDecodesAsReference(Format format, size_t n, bool zero_scales,
                                           std::mt19937& rng, uint32_t B = 64) {
  const WireSpec spec{format, B};
  std::vector<uint8_t> w(WireBytes(spec, n));
  for (uint8_t& b : w) b = uint8_t(rng());
  std::uniform_real_distribution<float> ud(0.0f, 10.0f);
  for (size_t b = 0; b < (n + B - 1) / B; ++b) {
    uint32_t s = std::bit_cast<uint32_t>(std::ldexp(ud(rng), int(rng() % 60) - 30));
    if (zero_scales && b % 5 == 4) s = 0;
    if (b % 3 == 0) s |= 0x80000000u;
    std::memcpy(w.data() + 4 * b, &s, 4);
  }
  std::vector<float> local(n);
  for (float& v : local) v = ud(rng);
  SCOPED_TRACE(std::string(FormatName(format)) + " B=" + std::to_string(B));
  ASSERT_NO_FATAL_FAILURE(ExpectDecodeMatchesReference(spec, w.data(), n, DType::kFloat32, local.data()));
  ASSERT_NO_FATAL_FAILURE(ExpectDecodeAccumulateEncodeMatchesReference(spec, w.data(), n, DType::kFloat32,
                                                                       local.data(), false));
}

TEST_P(PerTarget, Int8DecodeOfArbitraryWireMatchesReference) {
  // Random codes (including -128 in unflagged blocks) and random scales, flagged or not.
  // B = 64 and 128: the fused kernel's paired blocks (AVX-512) with one or both flagged.
  std::mt19937 rng(uint32_t(GetParam() + 99));
  for (uint32_t B : {64u, 128u})
    ASSERT_NO_FATAL_FAILURE(
        ExpectArbitraryWireDecodesAsReference(Format::kInt8Block, B * 41 + 13, false, rng, B));
}

// Every block format (int4, e4m3, e5m2; int8 and int4 also with stochastic rounding) and the
// telemetry of the encoding kernels, against the reference on every target.
TEST_P(PerTarget, BlockFormatsMatchReference) {
  std::mt19937 rng(uint32_t(uint64_t(GetParam()) * 13 + 5));
  std::uniform_int_distribution<size_t> bpick(0, std::size(kBlocks) - 1);
  struct Case {
    Format f;
    uint8_t rounding;
  };
  const Case cases[] = {{Format::kInt4Block, kRoundNearestEven},
                        {Format::kFp8E4M3Block, kRoundNearestEven},
                        {Format::kFp8E5M2Block, kRoundNearestEven},
                        {Format::kInt8Block, kRoundStochastic},
                        {Format::kInt4Block, kRoundStochastic}};
  for (const Case& c : cases) {
    for (int round = 0; round < 2; ++round) {
      const uint32_t B = round == 0 ? 64 : kBlocks[bpick(rng)];
      const WireSpec spec{c.f, B, c.rounding, rng(), rng(), (uint64_t(rng()) << 32) - 77};
      for (size_t n : {size_t(0), size_t(1), size_t(B - 1), size_t(B), size_t(B + 1),
                       size_t(2 * B + 3), size_t(1009), size_t(20011)}) {
        for (DType t : kDTypes) {
          SCOPED_TRACE(Where(GetParam(), B, n, t) + " " + FormatName(c.f) +
                       (c.rounding ? " stochastic" : ""));
          const std::vector<uint8_t> src = MakeData(t, n, B, rng);
          const std::vector<uint8_t> local = MakeData(t, n, B, rng);
          std::vector<uint8_t> w_ref;
          ASSERT_NO_FATAL_FAILURE(ExpectEncodeMatchesReference(spec, t, src.data(), n, false, &w_ref));
          ASSERT_NO_FATAL_FAILURE(ExpectEncodeMatchesReference(spec, t, src.data(), n, true));
          ASSERT_NO_FATAL_FAILURE(ExpectDecodeMatchesReference(spec, w_ref.data(), n, t, local.data()));
          std::vector<uint8_t> f_ref;
          ASSERT_NO_FATAL_FAILURE(ExpectDecodeAccumulateEncodeMatchesReference(
              spec, w_ref.data(), n, t, local.data(), true, &f_ref));
          std::vector<uint8_t> f_plain = f_ref;
          DecodeAccumulateEncode(spec, w_ref.data(), n, t, local.data(), f_plain.data());
          ASSERT_EQ(f_ref, f_plain) << "DecAccEnc without stats";
        }
      }
    }
  }
}

TEST_P(PerTarget, BlockFormatsDecodeArbitraryWire) {
  // Random codes (NaN/Inf codes in unflagged blocks too) and random scales, flagged or not.
  std::mt19937 rng(uint32_t(GetParam() + 7));
  for (Format f : {Format::kInt4Block, Format::kFp8E4M3Block, Format::kFp8E5M2Block})
    ASSERT_NO_FATAL_FAILURE(ExpectArbitraryWireDecodesAsReference(f, 64 * 30 + 13, true, rng));
}

TEST_P(PerTarget, RawKernelsMatchReference) {
  std::mt19937 rng(uint32_t(uint64_t(GetParam()) * 7 + 3));
  for (Format f : {Format::kRawF32, Format::kRawBF16, Format::kRawF16, Format::kRawE5M2}) {
    const WireSpec spec{f, 0};
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(17), size_t(1009),
                     size_t(100003)}) {
      for (DType t : kDTypes) {
        SCOPED_TRACE(Where(GetParam(), 0, n, t) + " " + FormatName(f));
        const std::vector<uint8_t> src = MakeData(t, n, 64, rng);
        const std::vector<uint8_t> local = MakeData(t, n, 64, rng);
        std::vector<uint8_t> w_ref;
        ASSERT_NO_FATAL_FAILURE(ExpectEncodeMatchesReference(spec, t, src.data(), n, false, &w_ref));
        // Arbitrary wire bytes too (every NaN payload and subnormal of the raw type).
        std::vector<uint8_t> w_any(WireBytes(spec, n));
        for (uint8_t& b : w_any) b = uint8_t(rng());
        for (const std::vector<uint8_t>* wire : {&w_ref, &w_any}) {
          ASSERT_NO_FATAL_FAILURE(ExpectDecodeMatchesReference(spec, wire->data(), n, t, local.data()));
          ASSERT_NO_FATAL_FAILURE(ExpectDecodeAccumulateEncodeMatchesReference(
              spec, wire->data(), n, t, local.data(), false));
        }
      }
    }
  }
}

TEST_P(PerTarget, ConvertMatchesReferenceOnEveryPattern) {
  // Every 16-bit pattern as bf16 / f16 source, and many f32 patterns incl. ties.
  std::vector<uint16_t> all16(65536);
  for (uint32_t i = 0; i < 65536; ++i) all16[i] = uint16_t(i);
  std::vector<uint32_t> f32;
  std::mt19937 rng{uint32_t(GetParam())};
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : {0u, 1u, 0x1000u, 0x1001u, 0xFFFu, 0x3000u, 0x8000u, 0x18000u, 0x7FFFu,
                       0x7FFFFFu, 0x100000u, 0x300000u, 0x0FFFFFu})
      for (uint32_t s : {0u, 0x80000000u}) f32.push_back(s | (e << 23) | m);
  for (int i = 0; i < 200001; ++i) f32.push_back(rng());
  for (DType s : kDTypes) {
    const void* src = s == DType::kFloat32 ? static_cast<const void*>(f32.data()) : all16.data();
    const size_t n = s == DType::kFloat32 ? f32.size() : all16.size();
    for (DType d : kDTypes) {
      std::vector<uint8_t> y_ref(n * DTypeSize(d)), y_simd(y_ref.size());
      ref::Convert(s, src, n, d, y_ref.data());
      Convert(s, src, n, d, y_simd.data());
      ASSERT_EQ(y_ref, y_simd) << TargetName(GetParam()) << " " << DTypeName(s) << " -> "
                               << DTypeName(d);
    }
    if (s == DType::kFloat32) {  // f32 -> e5m2 through the raw encoder
      std::vector<uint8_t> e_ref(n), e_simd(n);
      ref::Encode({Format::kRawE5M2, 0}, s, src, n, e_ref.data());
      Encode({Format::kRawE5M2, 0}, s, src, n, e_simd.data());
      ASSERT_EQ(e_ref, e_simd) << "e5m2";
    }
  }
}

EQUARX_INSTANTIATE_PER_TARGET(PerTarget);

TEST(Targets, ForceTargetSwitchesAndRestores) {
  TargetGuard guard;
  const std::vector<int64_t> targets = AvailableTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_GE(targets.size(), 2u) << "expected at least one SIMD target plus the fallback";
  const int64_t best = CurrentTarget();
  EXPECT_EQ(best, targets.front());
  for (int64_t t : targets) {
    ForceTarget(t);
    EXPECT_EQ(CurrentTarget(), t) << TargetName(t);
    EXPECT_FALSE(TargetName(t).empty());
  }
  ForceTarget(0);
  EXPECT_EQ(CurrentTarget(), best);
  EXPECT_EQ(AvailableTargets(), targets);  // the list is not affected by forcing
}

}  // namespace
}  // namespace equarx::codec
