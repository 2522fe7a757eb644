// A parameterised test fixture that runs each test once per SIMD target the CPU supports and
// this build compiled (codec::AvailableTargets), forcing dispatch to it; and the name of each
// instantiation. Use: class MyTest : public PerTargetTest {}; TEST_P(MyTest, ...) {...}
// EQUARX_INSTANTIATE_PER_TARGET(MyTest);
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "codec/codec.h"

namespace equarx::codec {

class PerTargetTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    ForceTarget(GetParam());
    ASSERT_EQ(CurrentTarget(), GetParam());
  }
  void TearDown() override { ForceTarget(0); }
};

inline std::string TargetParamName(const ::testing::TestParamInfo<int64_t>& info) {
  return TargetName(info.param);
}

// The kernels of the forced target against the scalar reference (ref::), bit for bit. Every
// output buffer has a guard past its n values (a filled byte or float) that neither side may
// touch. They stop at the first mismatch: call them through ASSERT_NO_FATAL_FAILURE.

inline void ExpectSameStats(const EncodeStats& a, const EncodeStats& b, const char* what) {
  ASSERT_EQ(a.clipped, b.clipped) << what;
  ASSERT_EQ(a.values, b.values) << what;
  ASSERT_EQ(a.sum_sq_err_est, b.sum_sq_err_est) << what;
  ASSERT_EQ(a.max_abs_err_est, b.max_abs_err_est) << what;
  ASSERT_EQ(a.sum_sq_values, b.sum_sq_values) << what;
}

// Encode of n values of dtype t (with telemetry: its stats too); the reference's wire (and
// guard byte) into *wire if given.
inline void ExpectEncodeMatchesReference(const WireSpec& spec, DType t, const void* src, size_t n,
                                         bool telemetry, std::vector<uint8_t>* wire = nullptr) {
  EncodeStats s_ref, s_simd;
  std::vector<uint8_t> w_ref(WireBytes(spec, n) + 1, 0xAA), w_simd = w_ref;
  ref::Encode(spec, t, src, n, w_ref.data(), telemetry ? &s_ref : nullptr);
  Encode(spec, t, src, n, w_simd.data(), telemetry ? &s_simd : nullptr);
  ASSERT_EQ(w_ref, w_simd) << "Encode telemetry=" << telemetry;
  ASSERT_NO_FATAL_FAILURE(ExpectSameStats(s_ref, s_simd, "Encode stats"));
  if (wire) *wire = std::move(w_ref);
}

// Decode of `wire` (n values) to every dtype, and DecodeAccumulate of it with `local` (dtype t).
inline void ExpectDecodeMatchesReference(const WireSpec& spec, const uint8_t* wire, size_t n,
                                         DType t, const void* local) {
  for (DType d : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    std::vector<uint8_t> y_ref(n * DTypeSize(d) + 1, 0x55), y_simd = y_ref;
    ref::Decode(spec, wire, n, d, y_ref.data());
    Decode(spec, wire, n, d, y_simd.data());
    ASSERT_EQ(y_ref, y_simd) << "Decode to " << DTypeName(d);
  }
  std::vector<float> a_ref(n + 1, 7.0f), a_simd = a_ref;
  ref::DecodeAccumulate(spec, wire, n, t, local, a_ref.data());
  DecodeAccumulate(spec, wire, n, t, local, a_simd.data());
  ASSERT_EQ(0, std::memcmp(a_ref.data(), a_simd.data(), 4 * (n + 1))) << "DecodeAccumulate";
}

// DecodeAccumulateEncode of `wire` with `local` (with telemetry: its stats too); the
// reference's output (and guard byte) into *out if given.
inline void ExpectDecodeAccumulateEncodeMatchesReference(const WireSpec& spec, const uint8_t* wire,
                                                         size_t n, DType t, const void* local,
                                                         bool telemetry,
                                                         std::vector<uint8_t>* out = nullptr) {
  EncodeStats d_ref, d_simd;
  std::vector<uint8_t> f_ref(WireBytes(spec, n) + 1, 0x33), f_simd = f_ref;
  ref::DecodeAccumulateEncode(spec, wire, n, t, local, f_ref.data(), telemetry ? &d_ref : nullptr);
  DecodeAccumulateEncode(spec, wire, n, t, local, f_simd.data(), telemetry ? &d_simd : nullptr);
  ASSERT_EQ(f_ref, f_simd) << "DecodeAccumulateEncode telemetry=" << telemetry;
  ASSERT_NO_FATAL_FAILURE(ExpectSameStats(d_ref, d_simd, "DecodeAccumulateEncode stats"));
  if (out) *out = std::move(f_ref);
}

}  // namespace equarx::codec

#define EQUARX_INSTANTIATE_PER_TARGET(Suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(AllTargets, Suite, ::testing::ValuesIn(::equarx::codec::AvailableTargets()), \
                           ::equarx::codec::TargetParamName)
