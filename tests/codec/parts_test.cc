// Parts of a segment (codec::PartOf, the codec threads): a segment coded as parts, each part
// by its own kernel call on its own slice of the wire image, gives the same bytes and values
// as one call on the whole segment. Every format (raw and block), rounding, scale storage,
// block size (incl. odd ones and int4's odd blocks, whose parts start on pairs of blocks),
// dtype, with NaN/Inf blocks (the reference fallback), on every SIMD target and on the scalar
// reference itself; the parts are cut at several places, empty first parts and tails included.
#include <gtest/gtest.h>

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

std::vector<uint8_t> Data(DType t, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::ldexp(nd(rng), int((i / 64) % 9) - 4);
    if (i % 997 == 5) x[i] = NAN;
    if (i % 1409 == 9) x[i] = -INFINITY;
  }
  std::vector<uint8_t> bytes(n * DTypeSize(t));
  ref::Convert(DType::kFloat32, x.data(), n, t, bytes.data());
  return bytes;
}

struct Case {
  Format format;
  uint8_t rounding, scale;
  uint32_t block;
};

std::vector<Case> Cases() {
  std::vector<Case> c;
  for (Format f : {Format::kRawF32, Format::kRawBF16, Format::kRawF16, Format::kRawE5M2})
    c.push_back({f, kRoundNearestEven, kScaleF32, 64});
  for (const BlockFormatInfo& f : kBlockFormats)  // every row of the block format table
    for (uint8_t r : {kRoundNearestEven, kRoundStochastic})
      for (uint8_t s : {kScaleF32, kScaleBF16, kScaleTwoLevel})
        for (uint32_t B : {16u, 64u, 128u, 7u, 100u}) {
          const bool integer = f.mbits == 0;
          if (r == kRoundStochastic && !integer) continue;
          if (s == kScaleTwoLevel && (!integer || B % 16 != 0)) continue;
          c.push_back({f.format, r, s, B});
        }
  return c;
}

using EncodeFn = void (*)(WireSpec, DType, const void*, size_t, uint8_t*, EncodeStats*);
using DecodeFn = void (*)(WireSpec, const uint8_t*, size_t, DType, void*);
using DecAccFn = void (*)(WireSpec, const uint8_t*, size_t, DType, const void*, float*);
using DaeFn = void (*)(WireSpec, const uint8_t*, size_t, DType, const void*, uint8_t*, EncodeStats*);
struct Kernels {
  EncodeFn encode;
  DecodeFn decode;
  DecAccFn decacc;
  DaeFn dae;
};
const Kernels kDispatched{&Encode, &Decode, &DecodeAccumulate, &DecodeAccumulateEncode};
const Kernels kReference{&ref::Encode, &ref::Decode, &ref::DecodeAccumulate,
                         &ref::DecodeAccumulateEncode};

const uint8_t* At(const std::vector<uint8_t>& v, DType t, size_t i) { return v.data() + i * DTypeSize(t); }

void CheckParts(const Kernels& k, const std::string& name) {
  std::mt19937 rng(11);
  for (const Case& c : Cases())
    for (DType t : kDTypes) {
      WireSpec spec{c.format, c.block, c.rounding, rng(), rng(), 1000003};
      spec.scale = c.scale;
      const size_t g = PartGranule(spec);
      const size_t n = 23 * g + g / 2 + 1;  // a partial last block (or pair of blocks)
      const auto src = Data(t, n, rng), local = Data(t, n, rng);
      const size_t wb = WireBytes(spec, n);
      // Cut points (multiples of g): one part, two, three uneven, and a one-granule first part.
      const std::vector<std::vector<size_t>> cuts = {{0}, {0, 12 * g}, {0, 5 * g, 6 * g}, {0, g}, {0, 23 * g}};
      std::vector<uint8_t> whole(wb), whole_dae(wb);
      EncodeStats ws, wds;
      k.encode(spec, t, src.data(), n, whole.data(), &ws);
      k.dae(spec, whole.data(), n, t, local.data(), whole_dae.data(), &wds);
      std::vector<uint8_t> whole_dec(n * 4);
      k.decode(spec, whole.data(), n, DType::kFloat32, whole_dec.data());
      std::vector<float> whole_acc(n);
      k.decacc(spec, whole.data(), n, t, local.data(), whole_acc.data());
      for (const auto& cut : cuts) {
        SCOPED_TRACE(name + " " + FormatName(c.format) + (c.rounding ? " sr" : "") + " scale " +
                     std::to_string(c.scale) + " B=" + std::to_string(c.block) + " " +
                     std::string(DTypeName(t)) + " parts " + std::to_string(cut.size()) + " second at " +
                     std::to_string(cut.size() > 1 ? cut[1] : 0));
        std::vector<uint8_t> enc(wb, 0xAB), dae(wb, 0xCD), dec(n * 4, 0xEF);
        std::vector<float> acc(n, 3.0f);
        EncodeStats ps, pds;
        for (size_t i = 0; i < cut.size(); ++i) {
          const size_t b = cut[i], e = i + 1 < cut.size() ? cut[i + 1] : n;
          const WirePart p = PartOf(spec, n, b);
          EncodeStats s1, s2;
          k.encode(p.spec, t, At(src, t, b), e - b, enc.data() + p.wire_at, &s1);
          k.dae(p.spec, whole.data() + p.wire_at, e - b, t, At(local, t, b), dae.data() + p.wire_at, &s2);
          k.decode(p.spec, whole.data() + p.wire_at, e - b, DType::kFloat32, dec.data() + 4 * b);
          k.decacc(p.spec, whole.data() + p.wire_at, e - b, t, At(local, t, b), acc.data() + b);
          for (auto [from, to] : {std::pair{&s1, &ps}, std::pair{&s2, &pds}}) {
            to->values += from->values;
            to->clipped += from->clipped;
            to->sum_sq_err_est += from->sum_sq_err_est;
            to->sum_sq_values += from->sum_sq_values;
            to->max_abs_err_est = std::max(to->max_abs_err_est, from->max_abs_err_est);
          }
        }
        ASSERT_EQ(enc, whole) << "Encode";
        ASSERT_EQ(dae, whole_dae) << "DecodeAccumulateEncode";
        ASSERT_EQ(dec, whole_dec) << "Decode";
        ASSERT_EQ(0, std::memcmp(acc.data(), whole_acc.data(), 4 * n)) << "DecodeAccumulate";
        for (auto [a, b] : {std::pair{&ps, &ws}, std::pair{&pds, &wds}}) {
          EXPECT_EQ(a->values, b->values);
          EXPECT_EQ(a->clipped, b->clipped);
          EXPECT_EQ(a->max_abs_err_est, b->max_abs_err_est);
          EXPECT_NEAR(a->sum_sq_err_est, b->sum_sq_err_est, 1e-12 * b->sum_sq_err_est);
          EXPECT_NEAR(a->sum_sq_values, b->sum_sq_values, 1e-12 * b->sum_sq_values);
        }
      }
    }
}

TEST(Parts, ReferenceCodesPartsLikeTheWholeSegment) { CheckParts(kReference, "reference"); }

class PartsPerTarget : public PerTargetTest {};
TEST_P(PartsPerTarget, KernelsCodePartsLikeTheWholeSegment) {
  CheckParts(kDispatched, TargetName(GetParam()));
}
EQUARX_INSTANTIATE_PER_TARGET(PartsPerTarget);

TEST(Parts, GranuleIsWholeBlocksAndPairsForOddInt4Blocks) {
  EXPECT_EQ(PartGranule(WireSpec{Format::kRawBF16, 64}), 1u);
  EXPECT_EQ(PartGranule(WireSpec{Format::kInt8Block, 7}), 7u);
  EXPECT_EQ(PartGranule(WireSpec{Format::kInt4Block, 7}), 14u);
  EXPECT_EQ(PartGranule(WireSpec{Format::kInt4Block, 64}), 64u);
}

}  // namespace
}  // namespace equarx::codec
