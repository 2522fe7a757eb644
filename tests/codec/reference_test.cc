// Tests of the scalar reference int8 block codec against the properties its spec promises:
// the round-trip error bound per block, exact zeros, saturation, ties to even, the tiny-absmax
// flush, NaN/Inf handling in flagged blocks, block-grid independence of the segment cut, the
// fused kernels equal to the composition of their pieces, and the worked example of
// docs/wire_format.md byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "codec/codec.h"

namespace equarx::codec {
namespace {

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }
float Flt(uint32_t u) { return std::bit_cast<float>(u); }

// The spec's sum: one f32 add, a NaN result stored as the canonical 0x7FC00000.
uint32_t SumBits(float local, float decoded) {
  const float s = local + decoded;
  return std::isnan(s) ? 0x7FC00000u : Bits(s);
}

uint32_t ScaleBits(const std::vector<uint8_t>& w, size_t b) {
  uint32_t s;
  std::memcpy(&s, w.data() + 4 * b, 4);
  return s;
}

std::vector<uint8_t> Enc(uint32_t B, const std::vector<float>& x) {
  std::vector<uint8_t> w(WireBytes({Format::kInt8Block, B}, x.size()));
  ref::Encode({Format::kInt8Block, B}, DType::kFloat32, x.data(), x.size(), w.data());
  return w;
}

std::vector<float> Dec(uint32_t B, const std::vector<uint8_t>& w, size_t n) {
  std::vector<float> y(n);
  ref::Decode({Format::kInt8Block, B}, w.data(), n, DType::kFloat32, y.data());
  return y;
}

// Values as the given dtype would carry them (so bf16/f16 inputs are tested on their own grid).
std::vector<float> OnGrid(DType t, std::vector<float> x) {
  for (float& v : x) {
    if (t == DType::kBFloat16) v = ref::BF16ToF32(ref::F32ToBF16(v));
    if (t == DType::kFloat16) v = ref::F16ToF32(ref::F32ToF16(v));
  }
  return x;
}

std::vector<uint16_t> AsHalf(DType t, const std::vector<float>& x) {
  if (t == DType::kFloat32) return {};  // only for the 16-bit dtypes
  std::vector<uint16_t> h(x.size());
  ref::Convert(DType::kFloat32, x.data(), x.size(), t, h.data());
  return h;
}

// Per block: every finite element within absmax/(2Q) + absmax * 2^-20 of its input.
void ExpectWithinBound(const std::vector<float>& x, const std::vector<float>& y, size_t B) {
  for (size_t b = 0; b * B < x.size(); ++b) {
    const size_t end = std::min(x.size(), (b + 1) * B);
    float a = 0;
    bool nonfinite = false;
    for (size_t i = b * B; i < end; ++i) {
      if (std::isfinite(x[i])) a = std::max(a, std::fabs(x[i])); else nonfinite = true;
    }
    const double q = nonfinite ? 126.0 : 127.0;
    const double bound = a / (2 * q) + a * 0x1p-20;
    for (size_t i = b * B; i < end; ++i) {
      if (!std::isfinite(x[i])) continue;
      ASSERT_LE(std::fabs(double(x[i]) - double(y[i])), bound)
          << "block " << b << " i " << i << " x " << x[i] << " y " << y[i] << " a " << a;
    }
  }
}

TEST(Int8Reference, RoundTripBoundAllDtypesAndBlocks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> ed(-30, 30);
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (uint32_t B : {32u, 64u, 100u, 128u, 256u, 1000u, 4096u}) {
      const size_t n = size_t(B) * 5 + 17;
      std::vector<float> x(n);
      for (size_t i = 0; i < n; ++i) {
        const int e = t == DType::kFloat16 ? ed(rng) / 3 : ed(rng);  // keep f16 in range
        x[i] = std::ldexp(nd(rng), (i / B) % 2 ? e : 0);             // wide range per block
      }
      x = OnGrid(t, x);
      std::vector<uint8_t> w(WireBytes({Format::kInt8Block, B}, n));
      if (t == DType::kFloat32) {
        ref::Encode({Format::kInt8Block, B}, t, x.data(), n, w.data());
      } else {
        const std::vector<uint16_t> h = AsHalf(t, x);
        ref::Encode({Format::kInt8Block, B}, t, h.data(), n, w.data());
      }
      EXPECT_EQ(w, Enc(B, x)) << "dtype input must encode like its f32 value";
      ExpectWithinBound(x, Dec(B, w, n), B);
    }
  }
}

TEST(Int8Reference, AllZeroBlockIsScaleZeroAndExactZeros) {
  std::vector<float> x(200, 0.0f);
  x[7] = -0.0f;
  x[150] = 3.0f;  // block 2 of B=64 is not zero
  const std::vector<uint8_t> w = Enc(64, x);
  EXPECT_EQ(ScaleBits(w, 0), 0u);
  EXPECT_EQ(ScaleBits(w, 1), 0u);
  EXPECT_NE(ScaleBits(w, 2), 0u);
  EXPECT_EQ(ScaleBits(w, 3), 0u);
  const std::vector<float> y = Dec(64, w, x.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (i != 150) {
      EXPECT_EQ(Bits(y[i]), 0u) << i;  // +0, never -0
    }
  EXPECT_EQ(y[150], 3.0f);
}

TEST(Int8Reference, SaturationAndScale) {
  const std::vector<float> x = {0.1f, -7.0f, 3.5f, 7.0f};
  const std::vector<uint8_t> w = Enc(4, x);
  EXPECT_EQ(ScaleBits(w, 0), Bits(7.0f / 127.0f));
  const int8_t* q = reinterpret_cast<const int8_t*>(w.data() + 4);
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[3], 127);
  // Codes never leave [-127, 127] for finite blocks, whatever the values.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ud(-1e30f, 1e30f);
  std::vector<float> r(4096);
  for (float& v : r) v = ud(rng);
  const std::vector<uint8_t> wr = Enc(128, r);
  for (size_t i = 4 * 32; i < wr.size(); ++i) EXPECT_NE(int8_t(wr[i]), -128);
}

TEST(Int8Reference, RoundsTiesToEven) {
  // absmax 127 gives s = inv = 1 exactly, so codes are roundeven(x).
  const std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -2.5f, -3.5f, 4.5f, 2.4999998f};
  const std::vector<uint8_t> w = Enc(8, x);
  EXPECT_EQ(ScaleBits(w, 0), Bits(1.0f));
  const int8_t* q = reinterpret_cast<const int8_t*>(w.data() + 4);
  const int8_t want[8] = {127, 0, 2, 2, -2, -4, 4, 2};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], want[i]) << i;
}

TEST(Int8Reference, TinyAbsmaxFlushesToZero) {
  const float tiny = 0x1p-120f;
  const std::vector<float> x = {std::nextafter(tiny, 0.0f), -1e-38f, tiny, 0.5f * tiny,
                                0x1p-149f, -0x1p-130f};
  const std::vector<uint8_t> w = Enc(2, x);
  EXPECT_EQ(ScaleBits(w, 0), 0u);  // just below 2^-120: flushed
  EXPECT_NE(ScaleBits(w, 1), 0u);  // exactly 2^-120: kept
  EXPECT_EQ(ScaleBits(w, 1), Bits(tiny / 127.0f));
  EXPECT_EQ(ScaleBits(w, 2), 0u);  // subnormals: flushed
  for (int i : {0, 1, 4, 5}) EXPECT_EQ(w[12 + i], 0) << i;
  EXPECT_EQ(int8_t(w[12 + 2]), 127);
  EXPECT_EQ(int8_t(w[12 + 3]), 64);  // 63.5 ties to even 64
  const std::vector<float> y = Dec(2, w, x.size());
  for (int i : {0, 1, 4, 5}) EXPECT_EQ(Bits(y[i]), 0u);
}

TEST(Int8Reference, NonFiniteBlocksAreFlaggedAndSpareTheirNeighbours) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  const uint32_t B = 64;
  std::vector<float> x(4 * B);
  for (float& v : x) v = nd(rng);
  x[3] = NAN;
  x[B + 5] = INFINITY;
  x[B + 6] = -INFINITY;
  x[2 * B + 1] = -NAN;
  x[2 * B + 2] = INFINITY;
  std::vector<float> clean = x;  // block 3 stays finite
  const std::vector<uint8_t> w = Enc(B, x);
  for (size_t b = 0; b < 3; ++b) {
    EXPECT_TRUE(ScaleBits(w, b) & 0x80000000u) << b;
    float a = 0;
    for (size_t i = b * B; i < (b + 1) * B; ++i)
      if (std::isfinite(x[i])) a = std::max(a, std::fabs(x[i]));
    EXPECT_EQ(ScaleBits(w, b), Bits(a / 126.0f) | 0x80000000u);
  }
  EXPECT_FALSE(ScaleBits(w, 3) & 0x80000000u);
  const int8_t* q = reinterpret_cast<const int8_t*>(w.data() + 16);
  EXPECT_EQ(q[3], -128);
  EXPECT_EQ(q[B + 5], 127);
  EXPECT_EQ(q[B + 6], -127);
  EXPECT_EQ(q[2 * B + 1], -128);
  for (size_t i = 0; i < 3 * B; ++i)  // the flagged blocks use Q = 126
    if (std::isfinite(x[i])) {
      EXPECT_LE(std::abs(int(q[i])), 126) << i;
    }
  const std::vector<float> y = Dec(B, w, x.size());
  EXPECT_EQ(Bits(y[3]), 0x7FC00000u);
  EXPECT_EQ(y[B + 5], INFINITY);
  EXPECT_EQ(y[B + 6], -INFINITY);
  EXPECT_EQ(Bits(y[2 * B + 1]), 0x7FC00000u);
  EXPECT_EQ(y[2 * B + 2], INFINITY);
  ExpectWithinBound(x, y, B);  // finite elements of flagged blocks within the Q=126 bound
  // The clean block encodes exactly as it would alone.
  const std::vector<float> last(clean.begin() + 3 * B, clean.end());
  const std::vector<uint8_t> wl = Enc(B, last);
  EXPECT_EQ(ScaleBits(w, 3), ScaleBits(wl, 0));
  EXPECT_TRUE(std::equal(w.begin() + 16 + 3 * B, w.end(), wl.begin() + 4));
  // A block holding only non-finite values: scale 0 flagged.
  const std::vector<uint8_t> wn = Enc(4, {NAN, INFINITY, -INFINITY, NAN});
  EXPECT_EQ(ScaleBits(wn, 0), 0x80000000u);
}

TEST(Int8Reference, SegmentCutsOnBlockBoundariesGiveTheSameBytes) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  const uint32_t B = 32;
  std::vector<float> x(10 * B + 9);
  for (float& v : x) v = nd(rng) * 100.0f;
  const std::vector<uint8_t> whole = Enc(B, x);
  const std::vector<float> yw = Dec(B, whole, x.size());
  const size_t cut = 4 * B;
  const std::vector<float> a(x.begin(), x.begin() + cut), b(x.begin() + cut, x.end());
  const std::vector<float> ya = Dec(B, Enc(B, a), a.size()), yb = Dec(B, Enc(B, b), b.size());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(Bits(yw[i]), Bits(i < cut ? ya[i] : yb[i - cut])) << i;
}

TEST(Int8Reference, FusedKernelsEqualTheirComposition) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for (uint32_t B : {32u, 64u, 128u, 5000u}) {
    const size_t n = 3 * size_t(B) + 11;
    std::vector<float> x(n), local(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = nd(rng);
      local[i] = nd(rng) * 3.0f;
    }
    x[B + 2] = INFINITY;   // flagged input block
    local[5] = NAN;        // NaN appears only in the sum
    local[2 * B] = 3e38f;  // sums that overflow to Inf
    x[2 * B] = 3e38f;
    const WireSpec spec{Format::kInt8Block, B};
    const std::vector<uint8_t> w = Enc(B, x);
    for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      const std::vector<float> lg = OnGrid(t, local);
      const std::vector<uint16_t> lh = AsHalf(t, lg);
      const void* lp = t == DType::kFloat32 ? static_cast<const void*>(lg.data()) : lh.data();
      // DecodeAccumulate == f32(local) + Decode
      std::vector<float> dec = Dec(B, w, n), acc(n);
      ref::DecodeAccumulate(spec, w.data(), n, t, lp, acc.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(Bits(acc[i]), SumBits(lg[i], dec[i])) << i;
      // DecodeAccumulateEncode == Encode(DecodeAccumulate)
      std::vector<uint8_t> fused(w.size());
      ref::DecodeAccumulateEncode(spec, w.data(), n, t, lp, fused.data());
      EXPECT_EQ(fused, Enc(B, acc));
      EXPECT_TRUE(ScaleBits(fused, 0) & 0x80000000u);  // the NaN from local
      EXPECT_TRUE(ScaleBits(fused, 1) & 0x80000000u);  // the Inf from the wire
      EXPECT_TRUE(ScaleBits(fused, 2) & 0x80000000u);  // the overflow
      if (t == DType::kFloat32) {  // in place is allowed for f32 local
        std::vector<float> inplace = lg;
        ref::DecodeAccumulate(spec, w.data(), n, t, inplace.data(), inplace.data());
        EXPECT_EQ(0, std::memcmp(inplace.data(), acc.data(), 4 * n));
      }
    }
  }
}

TEST(Int8Reference, DecodeToHalfTypesRoundsTheF32Decode) {
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  std::vector<float> x(300);
  for (float& v : x) v = nd(rng) * 1000.0f;
  x[10] = NAN;
  const std::vector<uint8_t> w = Enc(64, x);
  const std::vector<float> y = Dec(64, w, x.size());
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    std::vector<uint16_t> h(x.size());
    ref::Decode({Format::kInt8Block, 64}, w.data(), x.size(), t, h.data());
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(h[i], t == DType::kBFloat16 ? ref::F32ToBF16(y[i]) : ref::F32ToF16(y[i]));
  }
}

// The worked example of docs/wire_format.md, byte for byte.
TEST(Int8Reference, WorkedExampleOfTheWireFormatDoc) {
  const std::vector<float> x = {0.5f, -1.25f, 3.0f, 2.0f, NAN, 1.0f};
  const std::vector<uint8_t> want = {0x06, 0x83, 0xC1, 0x3C, 0x21, 0x08, 0x02, 0xBC,
                                     0x15, 0xCB, 0x7F, 0x55, 0x80, 0x7E};
  EXPECT_EQ(Enc(4, x), want);
  const std::vector<float> y = Dec(4, want, x.size());
  const uint32_t ybits[6] = {0x3EFDFBF8, 0xBFA04081, 0x40400000, 0x40008102, 0x7FC00000,
                             0x3F800000};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Bits(y[i]), ybits[i]) << i;
  EXPECT_EQ(Flt(0x3CC18306), 3.0f / 127.0f);
  EXPECT_EQ(Flt(0x3C020821), 1.0f / 126.0f);
}

TEST(RawReference, RawFormatsConvertAndAccumulate) {
  const std::vector<float> x = {1.0f, -2.0f, 70000.0f, NAN, 0x1p-20f};
  for (Format f : {Format::kRawF32, Format::kRawBF16, Format::kRawF16, Format::kRawE5M2}) {
    const WireSpec spec{f, 0};
    std::vector<uint8_t> w(WireBytes(spec, x.size()));
    ref::Encode(spec, DType::kFloat32, x.data(), x.size(), w.data());
    std::vector<float> y(x.size()), acc(x.size()), ones(x.size(), 1.0f);
    ref::Decode(spec, w.data(), x.size(), DType::kFloat32, y.data());
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -2.0f);
    EXPECT_TRUE(std::isnan(y[3]));
    if (f == Format::kRawF16) {
      EXPECT_EQ(y[2], INFINITY);
    }
    if (f == Format::kRawE5M2) {
      EXPECT_EQ(y[2], 57344.0f);
    }
    ref::DecodeAccumulate(spec, w.data(), x.size(), DType::kFloat32, ones.data(), acc.data());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(Bits(acc[i]), SumBits(1.0f, y[i])) << i;
    std::vector<uint8_t> w2(w.size()), w3(w.size());
    ref::DecodeAccumulateEncode(spec, w.data(), x.size(), DType::kFloat32, ones.data(),
                                w2.data());
    ref::Encode(spec, DType::kFloat32, acc.data(), x.size(), w3.data());
    EXPECT_EQ(w2, w3);
  }
}

// Error feedback's loss accumulation: residual += exact - got where finite, += 0 elsewhere;
// the dispatched kernel gives the reference's bits for every dtype of `got`.
TEST(AccumulateLoss, AddsFiniteDifferencesOnlyAndMatchesTheReference) {
  const std::vector<float> exact = {1.5f, -2.0f, 3.0f, INFINITY, NAN, 1e30f, 0.1f, -0.0f, 7.0f};
  const std::vector<float> got = {1.25f, -2.5f, INFINITY, INFINITY, 1.0f, -1e30f, 0.1f, 0.0f, 6.0f};
  std::vector<float> res(exact.size(), 0.5f), res_ref(exact.size(), 0.5f);
  ref::AccumulateLoss(DType::kFloat32, got.data(), exact.data(), exact.size(), res_ref.data());
  AccumulateLoss(DType::kFloat32, got.data(), exact.data(), exact.size(), res.data());
  const std::vector<float> want = {0.75f, 1.0f, 0.5f, 0.5f, 0.5f, 0.5f + 2e30f, 0.5f, 0.5f, 1.5f};
  for (size_t i = 0; i < exact.size(); ++i) {
    EXPECT_EQ(Bits(res[i]), Bits(res_ref[i])) << i;
    EXPECT_EQ(res[i], want[i]) << i;
  }
  // bf16 / f16 results (converted exactly to f32 first), on a larger array.
  std::mt19937 gen(3);
  std::normal_distribution<float> nd;
  for (DType t : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
    std::vector<float> x(1000), r1(1000), r2(1000);
    for (float& v : x) v = nd(gen);
    for (size_t i = 0; i < x.size(); ++i) r1[i] = r2[i] = nd(gen) * 1e-3f;
    std::vector<uint8_t> g(x.size() * DTypeSize(t));
    ref::Convert(DType::kFloat32, x.data(), x.size(), t, g.data());
    ref::AccumulateLoss(t, g.data(), x.data(), x.size(), r1.data());
    AccumulateLoss(t, g.data(), x.data(), x.size(), r2.data());
    EXPECT_EQ(0, std::memcmp(r1.data(), r2.data(), 4 * r1.size())) << DTypeName(t);
  }
}

}  // namespace
}  // namespace equarx::codec
