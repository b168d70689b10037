// SPDX-License-Identifier: Apache-2.0
//
// MIG in the simulated world: layouts checked against the real profiles,
// loads in instances, and layouts that change on the timeline.
#include <gtest/gtest.h>

#include "nvidia/mig_profiles.h"
#include "sim/scenario_parser.h"
#include "sim/world_model.h"
#include "testutil/scenario_error.h"

namespace tarmac::sim {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

const system_clock::time_point kMigEpoch = system_clock::time_point(seconds(1700000000));

using testing::ScenarioErrorOf;

TEST(MigProfilesTest, LayoutsFitOrSayWhyNot) {
  const char* h100 = "NVIDIA H100 80GB HBM3";
  int64_t gib80 = int64_t{80} << 30;
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, std::vector<std::string>(7, "1g.10gb")), "");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, {"4g.40gb", "3g.40gb"}), "");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}), "");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, {"1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb"}), "");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, std::vector<std::string>(8, "1g.10gb")),
            "at most 7 instances of 1g.10gb fit one GPU");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, {"4g.40gb", "4g.40gb"}),
            "at most 1 instance of 4g.40gb fit one GPU");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, {"7g.80gb", "1g.10gb"}),
            "the instances need 8 compute slices at 1g.10gb; a GPU has 7");
  EXPECT_EQ(nvidia::CheckMigLayout(h100, gib80, {"3g.40gb", "3g.40gb", "1g.10gb"}),
            "the instances need 9 memory slices at 1g.10gb; a GPU has 8");
  // A100 40GB has its own profiles; an 80GB one's are unknown there.
  EXPECT_EQ(nvidia::CheckMigLayout("NVIDIA A100-SXM4-40GB", int64_t{40} << 30,
                                   std::vector<std::string>(7, "1g.5gb")),
            "");
  EXPECT_NE(nvidia::CheckMigLayout("NVIDIA A100-SXM4-40GB", int64_t{40} << 30,
                                   {"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}),
            "");
  EXPECT_EQ(
      nvidia::CheckMigLayout("NVIDIA A100-SXM4-40GB", int64_t{40} << 30, {"3g.40gb"}),
      "no MIG profile '3g.40gb' on NVIDIA A100-SXM4-40GB (its profiles: 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, "
      "4g.20gb, 7g.40gb)");
  EXPECT_EQ(nvidia::CheckMigLayout("NVIDIA L4", int64_t{24} << 30, {"1g.6gb"}), "NVIDIA L4 has no MIG");
  EXPECT_TRUE(nvidia::IsMigProfileName("1g.10gb"));
  EXPECT_TRUE(nvidia::IsMigProfileName("7g.141gb"));
  EXPECT_FALSE(nvidia::IsMigProfileName("1g10gb"));
  EXPECT_FALSE(nvidia::IsMigProfileName("g.10gb"));
  EXPECT_FALSE(nvidia::IsMigProfileName("1g.10gb;rm"));
  EXPECT_EQ(nvidia::MigComputeSlicesOf("3g.40gb"), 3);
  EXPECT_EQ(nvidia::MigComputeSlicesOf("bad"), 0);
}

TEST(MigWorldTest, ScenarioLayoutMakesInstancesWithIdsMemoryAndUuids) {
  Result<Scenario> s = ParseScenario(R"(
[[gpu]]
count = 2
model = "NVIDIA H100 80GB HBM3"
memory = "80GiB"
mig_layout = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
mig_layout = ["7g.80gb"]
)",
                                     "lab.toml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const GpuSpec& g0 = s.value().gpus[0];
  EXPECT_TRUE(g0.is_mig_enabled);
  ASSERT_EQ(g0.mig_instances.size(), 4u);
  EXPECT_EQ(g0.mig_instances[0].profile, "3g.40gb");
  EXPECT_EQ(g0.mig_instances[0].gpu_instance_id, 1);
  EXPECT_EQ(g0.mig_instances[3].gpu_instance_id, 4);
  EXPECT_EQ(g0.mig_instances[0].memory_total_bytes, int64_t{40} << 30);
  EXPECT_EQ(g0.mig_instances[2].memory_total_bytes, int64_t{10} << 30);
  EXPECT_EQ(g0.mig_instances[0].uuid.rfind("MIG-", 0), 0u);
  // Every instance on the machine has its own UUID.
  std::set<std::string> uuids;
  for (const GpuSpec& g : s.value().gpus) {
    for (const MigInstanceSpec& m : g.mig_instances) uuids.insert(m.uuid);
  }
  EXPECT_EQ(uuids.size(), 9u);
  EXPECT_EQ(s.value().gpus[2].mig_instances[0].gpu_instance_id, 0);  // 7g alone is GPU instance 0.
}

TEST(MigWorldTest, ImpossibleLayoutsAreRefusedWithTheLine) {
  EXPECT_EQ(ScenarioErrorOf(
                "[[gpu]]\nmodel = \"NVIDIA H100 80GB HBM3\"\nmig_layout = [\"4g.40gb\", \"4g.40gb\"]\n"),
            "lab.toml:1: key 'gpu[0].mig_layout': at most 1 instance of 4g.40gb fit one GPU");
  EXPECT_EQ(
      ScenarioErrorOf("[[gpu]]\nmodel = \"NVIDIA H100 80GB HBM3\"\nmig_layout = [\"2g.7gb\"]\n"),
      "lab.toml:1: key 'gpu[0].mig_layout': no MIG profile '2g.7gb' on NVIDIA H100 80GB HBM3 (its profiles: "
      "1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)");
  EXPECT_EQ(ScenarioErrorOf("[[gpu]]\nmodel = \"NVIDIA L40S\"\nmig_layout = [\"1g.10gb\"]\n"),
            "lab.toml:1: key 'gpu[0].mig_layout': NVIDIA L40S has no MIG");
  EXPECT_EQ(ScenarioErrorOf("[[gpu]]\nmig_layout = \"1g.10gb\"\n"),
            "lab.toml:2: key 'gpu[0].mig_layout': expected an array of strings");
  EXPECT_EQ(ScenarioErrorOf(
                "[[gpu]]\n[[fault]]\nkind = \"mig_reconfigure\"\ngpu = 0\nmig_layout = [\"1g.10gb\"]\n"),
            "lab.toml:2: key 'fault[0].gpu': gpu 0 is not in MIG mode (set mig_layout on it)");
  EXPECT_EQ(ScenarioErrorOf("[[gpu]]\nmig_layout = []\n[[fault]]\nkind = \"mig_reconfigure\"\ngpu = 0\n"),
            "lab.toml:3: key 'fault[0].mig_layout': a mig_reconfigure fault needs mig_layout");
  EXPECT_EQ(
      ScenarioErrorOf("[[gpu]]\n[[fault]]\nkind = \"xid\"\nxid = 13\ngpu = 0\nmig_layout = [\"1g.10gb\"]\n"),
      "lab.toml:2: key 'fault[0].mig_layout': only a mig_reconfigure fault takes mig_layout");
}

Load InInstance(int64_t pid, int gpu, const std::string& mig_uuid, double util, int64_t memory_gib) {
  Load l;
  l.pid = pid;
  l.gpus = {gpu};
  l.mig_uuids = {mig_uuid};
  l.utilization_ratio = util;
  l.pattern = LoadPattern::kSteady;
  l.memory_bytes = memory_gib << 30;
  l.started_at = kMigEpoch;
  return l;
}

TEST(MigWorldTest, LoadsCountInTheirInstanceOnly) {
  Result<Scenario> parsed = ParseScenario(R"(
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
mig_layout = ["3g.40gb", "1g.10gb", "1g.10gb"]
)",
                                          "lab.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const Scenario& s = parsed.value();
  const std::vector<MigInstanceSpec>& mig = s.gpus[0].mig_instances;
  std::vector<Load> loads = {InInstance(100, 0, mig[1].uuid, 1.0, 4), InInstance(101, 0, mig[1].uuid, 1.0, 4),
                             InInstance(102, 0, mig[0].uuid, 0.5, 30)};
  Load whole;  // A load on the GPU whole, as a program that ignores MIG: not counted.
  whole.pid = 103;
  whole.gpus = {0};
  whole.utilization_ratio = 1;
  whole.memory_bytes = int64_t{1} << 30;
  whole.started_at = kMigEpoch;
  loads.push_back(whole);
  WorldState w = EvaluateWorld(s, loads, kMigEpoch, kMigEpoch + seconds(10));
  const GpuState& g = w.gpus[0];
  ASSERT_EQ(g.mig_instances.size(), 3u);
  EXPECT_EQ(g.mig_instances[1].memory_used_bytes, int64_t{8} << 30);
  EXPECT_EQ(g.mig_instances[1].utilization_percent, 100);  // Two full loads share the instance.
  EXPECT_EQ(g.mig_instances[0].memory_used_bytes, int64_t{30} << 30);
  EXPECT_EQ(g.mig_instances[2].memory_used_bytes, 0);
  ASSERT_EQ(g.processes.size(), 3u);
  EXPECT_EQ(g.processes[0].gpu_instance_id, mig[1].gpu_instance_id);
  EXPECT_EQ(g.processes[0].compute_instance_id, 0);
  EXPECT_EQ(g.processes[2].gpu_instance_id, mig[0].gpu_instance_id);
  EXPECT_EQ(g.memory_used_bytes, int64_t{38} << 30);
  // Per-instance engine activity; the whole GPU weighs each by its slices.
  EngineActivity one =
      EngineActivityAt(s, 0, loads, kMigEpoch, kMigEpoch + seconds(10), mig[1].gpu_instance_id);
  EngineActivity empty =
      EngineActivityAt(s, 0, loads, kMigEpoch, kMigEpoch + seconds(10), mig[2].gpu_instance_id);
  EngineActivity all = EngineActivityAt(s, 0, loads, kMigEpoch, kMigEpoch + seconds(10));
  EXPECT_NEAR(one.graphics, 1.0, 1e-9);
  EXPECT_EQ(empty.graphics, 0);
  EXPECT_NEAR(all.graphics, 1.0 / 7 + 0.5 * 3 / 7, 0.02);
}

TEST(MigWorldTest, ReconfigurationReplacesTheInstancesAndIsAnEvent) {
  Result<Scenario> parsed = ParseScenario(R"(
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
mig_layout = ["1g.10gb", "1g.10gb"]
[[fault]]
kind = "mig_reconfigure"
gpu = 0
at = "60s"
mig_layout = ["3g.40gb"]
)",
                                          "lab.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const Scenario& s = parsed.value();
  WorldState before = EvaluateWorld(s, {}, kMigEpoch, kMigEpoch + seconds(30));
  WorldState after = EvaluateWorld(s, {}, kMigEpoch, kMigEpoch + seconds(90));
  ASSERT_EQ(before.gpus[0].mig_instances.size(), 2u);
  ASSERT_EQ(after.gpus[0].mig_instances.size(), 1u);
  EXPECT_EQ(after.gpus[0].mig_instances[0].spec->profile, "3g.40gb");
  EXPECT_NE(after.gpus[0].mig_instances[0].spec->uuid, before.gpus[0].mig_instances[0].spec->uuid);
  std::vector<WorldEvent> events = EventsBetween(s, kMigEpoch, kMigEpoch, kMigEpoch + seconds(90));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event_type, 0x100u);
  EXPECT_EQ(events[0].gpu, 0);
}

}  // namespace
}  // namespace tarmac::sim
