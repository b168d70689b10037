// SPDX-License-Identifier: Apache-2.0
//
// The counters no snapshot holds: totals that only grow, and the idle and
// held-idle spells going on now, which end when the GPU works (or cannot be
// read) and cost what their seconds cost.
#include "metrics/counters.h"

#include <gtest/gtest.h>

namespace tarmac::metrics {
namespace {

using std::chrono::seconds;

node::NodeView OneGpu(double utilization, bool holds_idle, node::GpuHealth health = node::GpuHealth::kOk) {
  node::NodeView f;
  node::GpuView g;
  g.info.uuid = "GPU-0";
  g.info.name = "NVIDIA H100 80GB HBM3";
  g.sample.utilization_gpu_ratio = utilization;
  g.sample.health = health;
  g.sample.has_processes = true;
  if (holds_idle) {
    node::ProcessView p;
    p.process.pid = 42;
    p.process.used_memory_bytes = int64_t{4} << 30;
    p.process.sm_utilization_ratio = 0;
    g.processes.push_back(p);
  }
  f.gpus.push_back(g);
  return f;
}

TEST(NodeCountersTest, SpellsEndWhenTheGpuWorksOrCannotBeReadAndTotalsKeepGrowing) {
  NodeCounters counters([](const std::string&) { return 3.6; });  // 0.001 an idle second.
  std::chrono::steady_clock::time_point t{};
  counters.Update(OneGpu(0, true), node::LeaseMarks{}, t);  // The first reading: no time yet.
  for (int i = 1; i <= 3; ++i) counters.Update(OneGpu(0, true), node::LeaseMarks{}, t + seconds(i));
  GpuCounters c = counters.Get().at("GPU-0");
  EXPECT_DOUBLE_EQ(c.idle_for_seconds, 3);
  EXPECT_DOUBLE_EQ(c.held_idle_for_seconds, 3);
  EXPECT_NEAR(c.idle_for_cost, 0.003, 1e-12);
  counters.Update(OneGpu(0.9, false), node::LeaseMarks{}, t + seconds(4));  // It works.
  c = counters.Get().at("GPU-0");
  EXPECT_EQ(c.idle_for_seconds, 0);
  EXPECT_EQ(c.idle_for_cost, 0);
  EXPECT_EQ(c.held_idle_for_seconds, 0);
  EXPECT_DOUBLE_EQ(c.idle_seconds, 3);  // The totals stay.
  EXPECT_DOUBLE_EQ(c.held_idle_seconds, 3);
  counters.Update(OneGpu(0, false), node::LeaseMarks{}, t + seconds(5));
  counters.Update(OneGpu(0, false), node::LeaseMarks{}, t + seconds(6));
  EXPECT_DOUBLE_EQ(counters.Get().at("GPU-0").idle_for_seconds, 2);
  EXPECT_EQ(counters.Get().at("GPU-0").held_idle_for_seconds, 0);  // Idle, but nobody holds memory.
  counters.Update(OneGpu(0, false, node::GpuHealth::kLost), node::LeaseMarks{}, t + seconds(7));
  EXPECT_EQ(counters.Get().at("GPU-0").idle_for_seconds, 0);
  EXPECT_DOUBLE_EQ(counters.Get().at("GPU-0").idle_seconds, 5);
  // Each second in exactly one state.
  std::map<std::string, double> states = counters.Get().at("GPU-0").state_seconds;
  EXPECT_EQ(states,
            (std::map<std::string, double>{{"busy", 1}, {"held_idle", 3}, {"idle", 2}, {"unknown", 1}}));
}

TEST(NodeCountersTest, LeaseSecondsGoToTheLeasesUserAndKind) {
  NodeCounters counters([](const std::string&) { return 0.0; });
  std::chrono::steady_clock::time_point t{};
  node::NodeView f = OneGpu(0.5, false);
  node::LeaseMarks marks;
  counters.Update(f, marks, t);
  marks.leases[0] = node::GpuLease{7, "alice", node::LeaseKind::kReservation};
  counters.Update(f, marks, t + seconds(2));
  marks.leases[0] = node::GpuLease{8, "bob", node::LeaseKind::kBackfill};
  counters.Update(f, marks, t + seconds(3));
  std::map<std::pair<std::string, std::string>, double> held = counters.Get().at("GPU-0").lease_seconds;
  EXPECT_EQ(held, (std::map<std::pair<std::string, std::string>, double>{{{"alice", "reservation"}, 2},
                                                                         {{"bob", "backfill"}, 1}}));
}

// The time charged to users: a reservation held idle is its user's with
// its cost; then, outside the lease, the GPU's time goes to the user of
// the process holding it.
TEST(NodeCountersTest, UserChargesFollowTheLeaseThenTheProcessesWithTheirCost) {
  NodeCounters counters([](const std::string&) { return 3.6; });  // 0.001 a second.
  std::chrono::steady_clock::time_point t{};
  node::NodeView f = OneGpu(0, true);
  f.gpus[0].processes[0].details.user = "bob";
  node::LeaseMarks marks;
  marks.leases[0] = node::GpuLease{7, "alice", node::LeaseKind::kReservation};
  counters.Update(f, marks, t);
  counters.Update(f, marks, t + seconds(4));
  marks.leases.clear();
  f.gpus[0].sample.utilization_gpu_ratio = 0.7;
  counters.Update(f, marks, t + seconds(6));
  std::map<UserChargeKey, UserCharge> charged = counters.Get().at("GPU-0").user_charges;
  ASSERT_EQ(charged.size(), 2u);
  UserCharge alice = charged[UserChargeKey{"alice", "lease", "idle"}];
  EXPECT_DOUBLE_EQ(alice.seconds, 4);
  EXPECT_NEAR(alice.cost, 0.004, 1e-12);
  EXPECT_DOUBLE_EQ((charged[UserChargeKey{"bob", "process", "busy"}].seconds), 2);
  // An hour after its last charge a user's series goes.
  f.gpus[0].processes.clear();
  counters.Update(f, marks, t + seconds(5) + std::chrono::minutes(60));
  EXPECT_EQ(counters.Get().at("GPU-0").user_charges.size(), 1u);
}

TEST(NodeCountersTest, PodsAndSlurmJobsCountTheirOwnSecondsByStateAndTheirSeriesEndAnHourAfterThem) {
  NodeCounters counters([](const std::string&) { return 0.0; });
  std::chrono::steady_clock::time_point t{};
  node::NodeView f = OneGpu(0.5, false);
  f.gpus[0].allocated_to = node::KubernetesNames{"trainer-0", "ml", "main"};
  node::LeaseMarks marks;
  counters.Update(f, marks, t);
  counters.Update(f, marks, t + seconds(2));  // Busy, 2 s.
  f.gpus[0].sample.utilization_gpu_ratio = 0;
  marks.leases[0] = node::GpuLease{9, "erin", node::LeaseKind::kSlurm, false, "4242"};
  counters.Update(f, marks, t + seconds(5));  // Idle, 3 s, the job too.
  std::map<JobKey, JobSeconds> jobs = counters.Get().at("GPU-0").job_seconds;
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_DOUBLE_EQ((jobs[JobKey{"ml", "trainer-0", "", "busy"}].seconds), 2);
  EXPECT_DOUBLE_EQ((jobs[JobKey{"ml", "trainer-0", "", "idle"}].seconds), 3);
  EXPECT_DOUBLE_EQ((jobs[JobKey{"", "", "4242", "idle"}].seconds), 3);

  // Both let go: their series stay an hour (every scrape reads the final
  // count), then go.
  f.gpus[0].allocated_to.reset();
  marks.leases.clear();
  counters.Update(f, marks, t + seconds(6));
  counters.Update(f, marks, t + seconds(5) + std::chrono::minutes(59));
  EXPECT_EQ(counters.Get().at("GPU-0").job_seconds.size(), 3u);
  counters.Update(f, marks, t + seconds(4) + std::chrono::minutes(60));
  EXPECT_EQ(counters.Get().at("GPU-0").job_seconds.size(), 2u);  // The pod was last busy at 2 s.
  counters.Update(f, marks, t + seconds(6) + std::chrono::minutes(60));
  EXPECT_TRUE(counters.Get().at("GPU-0").job_seconds.empty());
}

TEST(NodeCountersTest, AMigInstancesPodCountsInItsInstancesOwnState) {
  NodeCounters counters([](const std::string&) { return 0.0; });
  std::chrono::steady_clock::time_point t{};
  node::NodeView f = OneGpu(0, false);
  node::MigInstance busy, idle;
  busy.uuid = "MIG-a";
  busy.gpu_instance_id = 1;
  busy.graphics_engine_active_ratio = 0.6;
  idle.uuid = "MIG-b";
  idle.gpu_instance_id = 2;
  idle.graphics_engine_active_ratio = 0;
  f.gpus[0].sample.mig_instances = {busy, idle};
  f.gpus[0].mig_allocated_to["MIG-a"] = node::KubernetesNames{"infer-a", "ml", "main"};
  f.gpus[0].mig_allocated_to["MIG-b"] = node::KubernetesNames{"infer-b", "ml", "main"};
  counters.Update(f, node::LeaseMarks{}, t);
  counters.Update(f, node::LeaseMarks{}, t + seconds(4));
  std::map<JobKey, JobSeconds> jobs = counters.Get().at("GPU-0").job_seconds;
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_DOUBLE_EQ((jobs[JobKey{"ml", "infer-a", "", "busy"}].seconds), 4);
  EXPECT_DOUBLE_EQ((jobs[JobKey{"ml", "infer-b", "", "idle"}].seconds), 4);
}

}  // namespace
}  // namespace tarmac::metrics
