// The public inspection API (equarx/inspect.h) that the tools use instead of the library's
// internals: SIMD targets, the environment knobs, and the library's own conversions.
#include "equarx/inspect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace equarx {
namespace {

TEST(Inspect, SimdTargetsBestFirstAndTheActiveOne) {
  const std::vector<std::string> targets = SimdTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(ActiveSimdTarget(), targets.front());
  for (const std::string& t : targets) EXPECT_FALSE(t.empty());
}

TEST(Inspect, EnvKnobsShowTheirCurrentValuesAndWarnings) {
  ::setenv("EQUARX_TIMEOUT_MS", "1234", 1);
  ::setenv("EQUARX_THREADS", "many", 1);
  ::unsetenv("EQUARX_LINK_GBIT");
  bool timeout = false, link = false;
  for (const EnvKnob& k : EnvKnobs()) {
    EXPECT_EQ(k.name.rfind("EQUARX_", 0), 0u) << k.name;
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_FALSE(k.default_value.empty()) << k.name;
    if (k.name == "EQUARX_TIMEOUT_MS") {
      timeout = true;
      EXPECT_TRUE(k.set);
      EXPECT_EQ(k.value, "1234");
      EXPECT_EQ(k.default_value, "300000");
    }
    if (k.name == "EQUARX_LINK_GBIT") {
      link = true;
      EXPECT_FALSE(k.set);
      EXPECT_EQ(k.value, "");
    }
  }
  EXPECT_TRUE(timeout && link);
  const std::vector<std::string> warnings = EnvWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("EQUARX_THREADS='many' ignored"), std::string::npos) << warnings[0];
  ::unsetenv("EQUARX_TIMEOUT_MS");
  ::unsetenv("EQUARX_THREADS");
  EXPECT_TRUE(EnvWarnings().empty());
}

TEST(Inspect, ConvertValuesRoundsAsTheWireAndRefusesBadArguments) {
  const float src[4] = {1.0f, -2.5f, 65536.0f, NAN};
  uint16_t bf[4], h[4];
  ASSERT_TRUE(ConvertValues(DType::kFloat32, src, 4, DType::kBFloat16, bf).ok());
  ASSERT_TRUE(ConvertValues(DType::kFloat32, src, 4, DType::kFloat16, h).ok());
  EXPECT_EQ(std::vector<uint16_t>(bf, bf + 4), (std::vector<uint16_t>{0x3F80, 0xC020, 0x4780, 0x7FC0}));
  EXPECT_EQ(std::vector<uint16_t>(h, h + 4), (std::vector<uint16_t>{0x3C00, 0xC100, 0x7C00, 0x7E00}));
  float back[4];
  ASSERT_TRUE(ConvertValues(DType::kBFloat16, bf, 4, DType::kFloat32, back).ok());
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_TRUE(std::isnan(back[3]));
  EXPECT_TRUE(ConvertValues(DType::kFloat32, nullptr, 0, DType::kBFloat16, nullptr).ok());
  const Status null = ConvertValues(DType::kFloat32, nullptr, 4, DType::kBFloat16, bf);
  EXPECT_EQ(null.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(null.message().find("null buffer"), std::string::npos) << null.ToString();
  const Status bad = ConvertValues(DType(9), src, 4, DType::kBFloat16, bf);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("unsupported dtype 9"), std::string::npos) << bad.ToString();
}

}  // namespace
}  // namespace equarx
