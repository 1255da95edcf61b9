// SPDX-License-Identifier: MIT
#include "core/version.hpp"

#include <gtest/gtest.h>

namespace preflight {
namespace core_version_test {
namespace {

Version v(const char* text) {
  const std::optional<Version> parsed = Version::parse(text);
  EXPECT_TRUE(parsed) << text;
  return parsed.value_or(Version());
}

TEST(Version, ParsesDriverCudaAndNcclVersions) {
  const Version driver = v("550.54.14");
  ASSERT_EQ(driver.size(), 3u);
  EXPECT_EQ(driver.major(), 550u);
  EXPECT_EQ(driver.minor(), 54u);
  EXPECT_EQ(driver.patch(), 14u);
  EXPECT_EQ(v("12.4").size(), 2u);
  EXPECT_EQ(v("13.0.1").patch(), 1u);
  EXPECT_EQ(v("580").size(), 1u);
  EXPECT_EQ(v("2.28.9").minor(), 28u);
  EXPECT_EQ(v("12.4")[7], 0u);  // beyond the last component
}

TEST(Version, RejectsAnythingElse) {
  for (const char* bad : {"", ".", "12.", ".4", "12..4", "550.54.1x", "v12.4", "12.4 ", " 12.4", "-1", "+1", "12,4",
                          "1.2.3.4.5", "1234567890", "12.4-rc1", "0x10"}) {
    EXPECT_FALSE(Version::parse(bad)) << "'" << bad << "'";
  }
}

TEST(Version, ComparesNumericallyWithMissingComponentsAsZero) {
  EXPECT_LT(v("550.54.14"), v("550.54.15"));
  EXPECT_LT(v("535.54.03"), v("535.104.05"));  // numeric, not text
  EXPECT_LT(v("12.4"), v("12.10"));
  EXPECT_EQ(v("580"), v("580.0.0"));
  EXPECT_LT(v("580"), v("580.65.06"));
  EXPECT_GT(v("580.65.06"), v("575.57.08"));
  EXPECT_EQ(v("535.54.03"), v("535.54.3"));
  EXPECT_LE(v("12.4"), v("12.4.0"));
  EXPECT_NE(v("12.4"), v("12.4.1"));
}

TEST(Version, PrintsAsParsed) {
  EXPECT_EQ(v("535.54.03").str(), "535.54.03");
  EXPECT_EQ(v("13.0").str(), "13.0");
  EXPECT_EQ(Version::of({12, 4}).str(), "12.4");
  EXPECT_EQ(Version::of({12, 4}), v("12.4"));
  EXPECT_EQ(Version().str(), "");
  EXPECT_TRUE(Version().empty());
}

TEST(Version, Truncates) {
  EXPECT_EQ(v("12.4.127").truncated(2).str(), "12.4");
  EXPECT_EQ(v("12.4.127").truncated(1).str(), "12");
  EXPECT_EQ(v("535.54.03").truncated(2).str(), "535.54");
  EXPECT_EQ(v("12.4").truncated(3).str(), "12.4");
  EXPECT_EQ(v("12.4.127").truncated(2), v("12.4"));
}

TEST(Version, DecodesCudaApiAndNcclCodes) {
  EXPECT_EQ(Version::from_cuda_api(12040)->str(), "12.4");
  EXPECT_EQ(Version::from_cuda_api(13000)->str(), "13.0");
  EXPECT_EQ(Version::from_cuda_api(10020)->str(), "10.2");
  EXPECT_FALSE(Version::from_cuda_api(0));
  EXPECT_FALSE(Version::from_cuda_api(-1));
  EXPECT_EQ(Version::from_nccl_code(22809)->str(), "2.28.9");
  EXPECT_EQ(Version::from_nccl_code(21805)->str(), "2.18.5");
  EXPECT_EQ(Version::from_nccl_code(2804)->str(), "2.8.4");  // legacy encoding (<= 2.8)
  EXPECT_FALSE(Version::from_nccl_code(0));
}

}  // namespace
}  // namespace core_version_test
}  // namespace preflight
