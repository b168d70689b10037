// SPDX-License-Identifier: Apache-2.0
#include "node/node_json.h"

#include <gtest/gtest.h>

namespace tarmac::node {
namespace {

NodeView Example() {
  NodeView f;
  f.hostname = "node-1";
  f.backend = "nvml";
  f.system.driver_version = "580.1";
  f.system.cuda_driver_version = 13000;
  f.taken_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1795992048123));
  GpuView g;
  g.info.index = 0;
  g.info.uuid = "GPU-1";
  g.info.name = "H100";
  g.info.pcie_width_max = 16;
  g.sample.utilization_gpu_ratio = 0.5;
  g.sample.memory_used_bytes = int64_t{20} << 30;
  g.sample.memory_total_bytes = int64_t{80} << 30;
  g.sample.clock_event_reasons = 0x41;
  g.sample.pcie_width = 8;
  g.sample.ecc.volatile_corrected = 3;
  g.sample.remapped_rows = RemappedRows{1, 2, true, false};
  g.sample.nvlink_active = {true, false};
  ProcessView p;
  p.process.pid = 42;
  p.process.used_memory_bytes = int64_t{1} << 30;
  p.process.sm_utilization_ratio = 0.0;
  p.details.exists = true;
  p.details.uid = 1000;
  p.details.user = "alice";
  p.details.command = "python train.py";
  p.details.cgroup.slurm_job_id = "4242";
  p.details.cgroup.systemd_unit = "train.service";
  g.processes.push_back(p);
  g.sample.processes.push_back(p.process);
  f.gpus.push_back(g);
  GpuView lost;
  lost.info.index = 1;
  lost.sample.index = 1;
  lost.sample.health = GpuHealth::kLost;
  lost.sample.error = "GPU is lost";
  f.gpus.push_back(lost);
  return f;
}

TEST(StatusJsonTest, UnsupportedReadingsAreAbsentNotZero) {
  nlohmann::json j = StatusToJson(Example());
  EXPECT_FALSE(j["gpus"][0].contains("power_milliwatts"));
  EXPECT_FALSE(j["gpus"][0].contains("fan_speed_ratio"));
  EXPECT_EQ(j["gpus"][0]["memory_used_bytes"], int64_t{20} << 30);
  EXPECT_EQ(j["gpus"][0]["is_pcie_degraded"], true);
  EXPECT_EQ(j["gpus"][0]["is_throttled"], true);
  EXPECT_EQ(j["gpus"][0]["processes"][0]["is_idle_holding"], true);
  EXPECT_EQ(j["gpus"][1]["health"], "lost");
  EXPECT_FALSE(j["gpus"][1].contains("processes"));
  EXPECT_EQ(j["taken_at"], "2026-11-29T22:40:48.123Z");
}

TEST(StatusJsonTest, NodeFromJsonIsTheInverse) {
  nlohmann::json first = StatusToJson(Example());
  Result<NodeView> back = NodeFromJson(first);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(StatusToJson(back.value()), first);
  EXPECT_EQ(back.value().gpus[0].processes[0].details.user, "alice");
  EXPECT_EQ(back.value().gpus[0].processes[0].details.cgroup.slurm_job_id, "4242");
  EXPECT_EQ(first["gpus"][0]["processes"][0]["systemd_unit"], "train.service");
  EXPECT_FALSE(first["gpus"][0]["processes"][0].contains("container_id"));
  EXPECT_EQ(back.value().taken_at, Example().taken_at);
}

// Every lease kind survives status JSON; "normal", what agents before the
// one vocabulary said of run and reservation leases, reads as run.
TEST(StatusJsonTest, LeaseKindsSurviveAndAnOlderAgentsNormalReadsAsRun) {
  NodeView f = Example();
  f.gpus[0].lease = GpuLease{4, "bob", LeaseKind::kSlurm, false, "42"};
  f.gpus[1].lease = GpuLease{5, "batch", LeaseKind::kBackfill, true};
  f.gpus[0].lease->lent_to = 9;
  f.gpus[0].lease->lent_to_user = "alice";
  nlohmann::json j = StatusToJson(f);
  EXPECT_EQ(j["gpus"][0]["lease"]["lent_to"], (nlohmann::json{{"id", 9}, {"user", "alice"}}));
  EXPECT_FALSE(j["gpus"][1]["lease"].contains("lent_to"));
  EXPECT_EQ(j["gpus"][0]["lease"]["kind"], "slurm");
  EXPECT_EQ(j["gpus"][0]["lease"]["slurm_job"], "42");
  EXPECT_EQ(j["gpus"][1]["lease"]["kind"], "backfill");
  Result<NodeView> back = NodeFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().gpus[0].lease->slurm_job, "42");
  EXPECT_EQ(back.value().gpus[0].lease->lent_to, 9);
  EXPECT_EQ(back.value().gpus[0].lease->lent_to_user, "alice");
  EXPECT_TRUE(back.value().gpus[1].lease->is_backfill());
  EXPECT_TRUE(back.value().gpus[1].lease->is_revoking);
  j["gpus"][1]["lease"]["kind"] = "normal";
  back = NodeFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().gpus[1].lease->kind, LeaseKind::kRun);
}

// A field of the wrong type (an agent of another version) is left out and
// the rest is read; before, some such fields threw out of NodeFromJson.
TEST(StatusJsonTest, AFieldOfTheWrongTypeIsLeftOutNotThrown) {
  nlohmann::json j = StatusToJson(Example());
  j["gpus"][0]["index"] = "zero";
  j["gpus"][0]["processes"][0]["pid"] = "p";
  j["gpus"][0]["remapped_rows"] = {{"corrected", "many"}, {"pending", true}};
  j["gpus"][0]["lease"] = {{"id", "seven"}};
  j["gpus"][0]["power_milliwatts"] = "high";
  Result<NodeView> back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const GpuView& g = back.value().gpus[0];
  EXPECT_EQ(g.info.index, 0);
  EXPECT_EQ(g.processes[0].process.pid, 0);
  ASSERT_TRUE(g.sample.remapped_rows.has_value());
  EXPECT_TRUE(g.sample.remapped_rows->is_pending);
  EXPECT_FALSE(g.lease.has_value());
  EXPECT_FALSE(g.sample.power_milliwatts.has_value());
  EXPECT_EQ(g.info.uuid, Example().gpus[0].info.uuid);
}

TEST(StatusJsonTest, RejectsWhatIsNotAStatusDocument) {
  EXPECT_EQ(NodeFromJson(nlohmann::json::array()).status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(NodeFromJson({{"version", 2}, {"gpus", nlohmann::json::array()}}).ok());
}

}  // namespace
}  // namespace tarmac::node
