// A parameterised test fixture that runs each test once per SIMD target the CPU supports and
// this build compiled (codec::AvailableTargets), forcing dispatch to it; and the name of each
// instantiation. Use: class MyTest : public PerTargetTest {}; TEST_P(MyTest, ...) {...}
// EQUARX_INSTANTIATE_PER_TARGET(MyTest);
#pragma once

#include <gtest/gtest.h>

#include <string>

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

}  // namespace equarx::codec

#define EQUARX_INSTANTIATE_PER_TARGET(Suite)                                                      \
  INSTANTIATE_TEST_SUITE_P(AllTargets, Suite, ::testing::ValuesIn(::equarx::codec::AvailableTargets()), \
                           ::equarx::codec::TargetParamName)
