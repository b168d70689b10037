// SPDX-License-Identifier: Apache-2.0
#include "common/enum_names.h"

#include <gtest/gtest.h>

#include "fleet/gpu_types.h"
#include "fleet/lease_kind.h"
#include "report/report.h"
#include "sched/lease_json.h"

namespace tarmac {
namespace {

enum class Color { kRed, kGreen, kBlue };
constexpr std::pair<Color, const char*> kColorNames[] = {
    {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}};

TEST(EnumNamesTest, OneTableReadBothWaysAndListed) {
  Color c = Color::kRed;
  EXPECT_TRUE(ParseEnum(kColorNames, "blue", &c));
  EXPECT_EQ(c, Color::kBlue);
  EXPECT_FALSE(ParseEnum(kColorNames, "Blue", &c));
  EXPECT_STREQ(EnumName(kColorNames, Color::kGreen), "green");
  EXPECT_STREQ(EnumName(kColorNames, static_cast<Color>(9)), "red");  // The first row: the default.
  EXPECT_EQ(EnumNames(kColorNames), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(EnumNameList(kColorNames), "red, green or blue");
}

// The enums whose names leave the process read back to themselves, and
// their option lists take every name.
TEST(EnumNamesTest, ProductEnumsRoundTripTheirNames) {
  for (fleet::GpuHealth h : {fleet::GpuHealth::kOk, fleet::GpuHealth::kLost, fleet::GpuHealth::kNoPermission,
                             fleet::GpuHealth::kUnresponsive, fleet::GpuHealth::kDriverNotLoaded,
                             fleet::GpuHealth::kError}) {
    EXPECT_EQ(fleet::GpuHealthNamed(fleet::GpuHealthName(h)), h) << fleet::GpuHealthName(h);
  }
  EXPECT_EQ(fleet::GpuHealthNamed("melted"), fleet::GpuHealth::kError);
  for (fleet::ProcessType t :
       {fleet::ProcessType::kCompute, fleet::ProcessType::kGraphics, fleet::ProcessType::kComputeAndGraphics}) {
    EXPECT_EQ(fleet::ProcessTypeNamed(fleet::ProcessTypeName(t)), t);
  }
  for (const std::string& name : report::GroupByNames()) {
    report::GroupBy by{};
    ASSERT_TRUE(report::ParseGroupBy(name, &by)) << name;
    EXPECT_EQ(report::GroupByName(by), name);
  }
  EXPECT_EQ(report::GroupByNames().size(), 6u);
  for (const std::string& name : sched::PriorityNames()) {
    sched::Priority p{};
    ASSERT_TRUE(sched::ParsePriority(name, &p)) << name;
    EXPECT_EQ(sched::PriorityName(p), name);
  }
  EXPECT_EQ(sched::PriorityNameList(), "normal, backfill, low or high");
}

}  // namespace
}  // namespace tarmac
