// SPDX-License-Identifier: Apache-2.0
// The enums whose names the CLI offers and reads back (common/enum_names.h
// tables in their modules).
#include <gtest/gtest.h>

#include "fleet/gpu_types.h"
#include "report/report.h"
#include "sched/lease_json.h"

namespace tarmac {
namespace {

// The enums whose names leave the process read back to themselves, and
// their option lists take every name.
TEST(EnumChoicesTest, ProductEnumsRoundTripTheirNames) {
  for (fleet::GpuHealth h :
       {fleet::GpuHealth::kOk, fleet::GpuHealth::kLost, fleet::GpuHealth::kNoPermission,
        fleet::GpuHealth::kUnresponsive, fleet::GpuHealth::kDriverNotLoaded, fleet::GpuHealth::kError}) {
    EXPECT_EQ(fleet::GpuHealthNamed(fleet::GpuHealthName(h)), h) << fleet::GpuHealthName(h);
  }
  EXPECT_EQ(fleet::GpuHealthNamed("melted"), fleet::GpuHealth::kError);
  for (fleet::ProcessType t : {fleet::ProcessType::kCompute, fleet::ProcessType::kGraphics,
                               fleet::ProcessType::kComputeAndGraphics}) {
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
