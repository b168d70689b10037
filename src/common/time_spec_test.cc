// SPDX-License-Identifier: Apache-2.0
#include "common/time_spec.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

constexpr int64_t kNow = 1800000000;

TEST(TimeSpecTest, AcceptsDurationsDatesAndUnixSeconds) {
  EXPECT_EQ(ParseTimeSpec("6h", kNow).value(), kNow - 6 * 3600);
  EXPECT_EQ(ParseTimeSpec("7d", kNow).value(), kNow - 7 * 86400);
  EXPECT_EQ(ParseTimeSpec("2w", kNow).value(), kNow - 14 * 86400);
  EXPECT_EQ(ParseTimeSpec("now", kNow).value(), kNow);
  EXPECT_EQ(ParseTimeSpec("@1795000000", kNow).value(), 1795000000);
  EXPECT_EQ(ParseTimeSpec("2026-11-29", kNow).value(), 1795910400);
  EXPECT_EQ(ParseTimeSpec("2026-11-29T14:00", kNow).value(), 1795910400 + 14 * 3600);
  EXPECT_EQ(ParseTimeSpec("2026-11-29 14:00:30Z", kNow).value(), 1795910400 + 14 * 3600 + 30);
}

TEST(TimeSpecTest, RejectsEverythingElseWithTheFormsItAccepts) {
  for (const char* bad : {"", "yesterday", "6x", "-6h", "2026-13-01", "2026-11-29T25:00", "2026-11-29X", "@",
                          "@abc", "12", "2026-11-29T14", "1e999h"}) {
    Result<int64_t> r = ParseTimeSpec(bad, kNow);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("duration ago"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace tarmac

namespace tarmac {
namespace {

TEST(TimeSpecTest, FormatsRfc3339InUtcToTheMillisecond) {
  auto t = std::chrono::system_clock::from_time_t(1795000000) + std::chrono::milliseconds(250);
  EXPECT_EQ(FormatRfc3339(t), "2026-11-18T11:06:40.250Z");
}

}  // namespace
}  // namespace tarmac
