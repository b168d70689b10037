// SPDX-License-Identifier: Apache-2.0
// The health verdict: each kind of evidence drains or degrades a GPU, an
// application Xid does not, and status says the verdict and why.
#include "node/health_verdict.h"

#include <gtest/gtest.h>

#include "node/node_json.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::node {
namespace {

GpuView Healthy() {
  GpuView g;
  g.info.index = 0;
  g.info.pcie_width_max = 16;
  g.sample.pcie_width = 16;
  g.sample.ecc.volatile_uncorrected = 0;
  g.sample.nvlink_active = {true, true};
  return g;
}

TEST(HealthVerdictTest, AHealthyGpuIsOk) {
  HealthVerdict v = JudgeGpu(Healthy());
  EXPECT_EQ(v.verdict, Verdict::kOk);
  EXPECT_TRUE(v.reasons.empty());
  EXPECT_STREQ(VerdictName(v.verdict), "ok");
}

TEST(HealthVerdictTest, EachKindOfDrainEvidenceDrains) {
  std::vector<std::pair<std::string, GpuView>> cases;
  GpuView lost = Healthy();
  lost.sample.health = GpuHealth::kLost;
  cases.emplace_back("unreadable (lost", lost);
  GpuView ecc = Healthy();
  ecc.sample.ecc.volatile_uncorrected = 2;
  cases.emplace_back("uncorrected ECC errors since the last reset: 2", ecc);
  GpuView remap = Healthy();
  remap.sample.remapped_rows = RemappedRows{0, 1, true, false};
  cases.emplace_back("row remapping pending a reset", remap);
  GpuView failed = Healthy();
  failed.sample.remapped_rows = RemappedRows{0, 1, false, true};
  cases.emplace_back("row remapping failed", failed);
  GpuView xid = Healthy();
  xid.xid_count = 3;
  xid.xid_count_by_code = {{13, 2}, {48, 1}};
  cases.emplace_back("Xid 48", xid);
  for (const auto& [why, g] : cases) {
    HealthVerdict v = JudgeGpu(g);
    EXPECT_EQ(v.verdict, Verdict::kDrain) << why;
    ASSERT_FALSE(v.reasons.empty()) << why;
    EXPECT_EQ(v.reasons[0].rfind(why, 0), 0u) << v.reasons[0];
  }
}

TEST(HealthVerdictTest, AnApplicationXidLeavesTheGpuOk) {
  GpuView g = Healthy();
  g.xid_count = 4;
  g.xid_count_by_code = {{13, 1}, {31, 1}, {43, 1}, {45, 1}};
  EXPECT_EQ(JudgeGpu(g).verdict, Verdict::kOk);
  g.xid_count_by_code[68] = 1;
  EXPECT_EQ(JudgeGpu(g).verdict, Verdict::kOk);
  g.xid_count_by_code[79] = 1;  // Fallen off the bus.
  EXPECT_EQ(JudgeGpu(g).verdict, Verdict::kDrain);
}

// Xids the history holds from before the agent restarted count as its own
// do, and say so; an application Xid among them does not.
TEST(HealthVerdictTest, XidsFromBeforeARestartStillDrain) {
  GpuView g = Healthy();
  g.earlier_xid_count_by_code = {{13, 1}};
  EXPECT_EQ(JudgeGpu(g).verdict, Verdict::kOk);
  g.earlier_xid_count_by_code = {{13, 1}, {48, 2}};
  HealthVerdict v = JudgeGpu(g);
  EXPECT_EQ(v.verdict, Verdict::kDrain);
  EXPECT_EQ(v.reasons, std::vector<std::string>{"Xid 48 (logged before the agent restarted)"});
  // Seen again since: said once, as the agent's own.
  g.xid_count = 1;
  g.xid_count_by_code = {{48, 1}};
  EXPECT_EQ(JudgeGpu(g).reasons, std::vector<std::string>{"Xid 48"});
  // And the status carries them to the client.
  Result<NodeView> back = NodeFromJson([&] {
    NodeView n;
    n.gpus.push_back(g);
    return StatusToJson(n);
  }());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value().gpus[0].earlier_xid_count_by_code, (std::map<int64_t, int64_t>{{13, 1}, {48, 2}}));
}

TEST(HealthVerdictTest, SlowdownANarrowLinkOrAnNvlinkDownDegrade) {
  GpuView slow = Healthy();
  slow.sample.clock_event_reasons = nvidia::kReasonHwThermalSlowdown | nvidia::kReasonSwPowerCap;
  HealthVerdict v = JudgeGpu(slow);
  EXPECT_EQ(v.verdict, Verdict::kDegraded);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_NE(v.reasons[0].find("hardware slowdown"), std::string::npos) << v.reasons[0];
  GpuView power_cap = Healthy();  // A software power cap is not degradation.
  power_cap.sample.clock_event_reasons = nvidia::kReasonSwPowerCap;
  EXPECT_EQ(JudgeGpu(power_cap).verdict, Verdict::kOk);
  GpuView narrow = Healthy();
  narrow.sample.pcie_width = 8;
  EXPECT_EQ(JudgeGpu(narrow).verdict, Verdict::kDegraded);
  GpuView link = Healthy();
  link.sample.nvlink_active = {true, false};
  EXPECT_EQ(JudgeGpu(link).verdict, Verdict::kDegraded);
  // Drain evidence wins over degradation.
  link.sample.ecc.volatile_uncorrected = 1;
  EXPECT_EQ(JudgeGpu(link).verdict, Verdict::kDrain);
}

TEST(HealthVerdictTest, StatusSaysEachGpusVerdictAndWhy) {
  NodeView view;
  view.gpus = {Healthy(), Healthy(), Healthy()};
  view.gpus[1].info.index = 1;
  view.gpus[1].sample.ecc.volatile_uncorrected = 1;
  view.gpus[2].info.index = 2;
  view.gpus[2].sample.pcie_width = 4;
  nlohmann::json status = StatusToJson(view);
  EXPECT_EQ(status["gpus"][1]["verdict"], "drain");
  EXPECT_EQ(status["gpus"][1]["verdict_reasons"][0], "uncorrected ECC errors since the last reset: 1");
  EXPECT_EQ(status["gpus"][2]["verdict"], "degraded");
  EXPECT_EQ(status["gpus"][0]["verdict"], "ok");
}

}  // namespace
}  // namespace tarmac::node
