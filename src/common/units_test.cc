// SPDX-License-Identifier: Apache-2.0
#include "common/units.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

TEST(UnitsTest, ParsesBinaryAndDecimalSizes) {
  EXPECT_EQ(ParseBytes("20GiB").value(), int64_t{20} << 30);
  EXPECT_EQ(ParseBytes("512 MiB").value(), int64_t{512} << 20);
  EXPECT_EQ(ParseBytes("1.5G").value(), int64_t{3} << 29);
  EXPECT_EQ(ParseBytes("2GB").value(), 2000000000);
  EXPECT_EQ(ParseBytes("4096").value(), 4096);
  EXPECT_EQ(ParseBytes("0").value(), 0);
}

TEST(UnitsTest, RejectsBadSizesWithTheText) {
  Result<int64_t> r = ParseBytes("20 bananas");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("20 bananas"), std::string::npos);
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("-1GiB").ok());
  EXPECT_FALSE(ParseBytes("GiB").ok());
  EXPECT_FALSE(ParseBytes("99999999999TiB").ok());
  EXPECT_FALSE(ParseBytes("nan").ok());
}

// Defect: `tarmac top` said "1 leases".
TEST(UnitsTest, CountsTakeTheirNounsNumber) {
  EXPECT_EQ(Counted(1, "lease"), "1 lease");
  EXPECT_EQ(Counted(0, "lease"), "0 leases");
  EXPECT_EQ(Counted(3, "process", "processes"), "3 processes");
}

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(ParseDuration("30s").value(), std::chrono::seconds(30));
  EXPECT_EQ(ParseDuration("10m").value(), std::chrono::minutes(10));
  EXPECT_EQ(ParseDuration("2h").value(), std::chrono::hours(2));
  EXPECT_EQ(ParseDuration("1d").value(), std::chrono::hours(24));
  EXPECT_EQ(ParseDuration("250ms").value(), std::chrono::milliseconds(250));
  EXPECT_EQ(ParseDuration("5").value(), std::chrono::seconds(5));
  EXPECT_FALSE(ParseDuration("5 weeks").ok());
  EXPECT_FALSE(ParseDuration("-3s").ok());
}

// A command line's duration needs its unit: tools read a bare number
// differently (Slurm: minutes; timeout(1): seconds).
TEST(UnitsTest, ACommandLineDurationNeedsAUnit) {
  Result<std::chrono::milliseconds> bare = ParseDurationWithUnit("90");
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().message(), "90: give a unit: 90m, 90s");
  EXPECT_FALSE(ParseDurationWithUnit("1.5").ok());
  EXPECT_EQ(ParseDurationWithUnit("90m").value(), std::chrono::minutes(90));
  EXPECT_EQ(ParseDurationWithUnit("250ms").value(), std::chrono::milliseconds(250));
  EXPECT_FALSE(ParseDurationWithUnit("soon").ok());
  EXPECT_EQ(ParseDuration("90").value(), std::chrono::seconds(90));  // Config files keep seconds.
}

TEST(UnitsTest, FormatsBytesAndDurations) {
  EXPECT_EQ(FormatBytes(int64_t{80} << 30), "80.0 GiB");
  EXPECT_EQ(FormatBytes(int64_t{512} << 20), "512 MiB");
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(45)), "45s");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(750)), "12m 30s");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(3900)), "1h 05m");
  // GPU time: hours, minutes under an hour, and "<1m" for a moment.
  EXPECT_EQ(FormatHours(12.5), "12.5h");
  EXPECT_EQ(FormatHours(0.99), "59m");
  EXPECT_EQ(FormatHours(0.005), "<1m");
  EXPECT_EQ(FormatHours(0), "0");
  // A part of a second is said, not dropped ("acts in 0s" for 250 ms).
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(120'000)), "2m 00s");
}

}  // namespace
}  // namespace tarmac
