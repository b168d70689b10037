// SPDX-License-Identifier: Apache-2.0
// The enums whose names the CLI offers and reads back (common/enum_names.h
// tables in their modules).
#include <gtest/gtest.h>

#include "node/gpu_types.h"
#include "report/report.h"
#include "sched/lease_json.h"

namespace tarmac {
namespace {

// The enums whose names leave the process read back to themselves, and
// their option lists take every name.
TEST(EnumChoicesTest, ProductEnumsRoundTripTheirNames) {
  for (node::GpuHealth h :
       {node::GpuHealth::kOk, node::GpuHealth::kLost, node::GpuHealth::kNoPermission,
        node::GpuHealth::kUnresponsive, node::GpuHealth::kDriverNotLoaded, node::GpuHealth::kError}) {
    EXPECT_EQ(node::GpuHealthNamed(node::GpuHealthName(h)), h) << node::GpuHealthName(h);
  }
  EXPECT_EQ(node::GpuHealthNamed("melted"), node::GpuHealth::kError);
  for (node::ProcessType t :
       {node::ProcessType::kCompute, node::ProcessType::kGraphics, node::ProcessType::kComputeAndGraphics}) {
    EXPECT_EQ(node::ProcessTypeNamed(node::ProcessTypeName(t)), t);
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
