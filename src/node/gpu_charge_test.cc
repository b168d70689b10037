// SPDX-License-Identifier: Apache-2.0
#include "node/gpu_charge.h"

#include <gtest/gtest.h>

#include "testutil/mig_views.h"

namespace tarmac::node {
namespace {

ProcessView Process(int64_t pid, const std::string& user, ProcessType type = ProcessType::kCompute) {
  ProcessView p;
  p.process.pid = pid;
  p.process.type = type;
  p.process.used_memory_bytes = int64_t{2} << 30;
  p.details.pid = pid;
  p.details.user = user;
  return p;
}

GpuView Gpu(double utilization) {
  GpuView g;
  g.info.memory_total_bytes = int64_t{80} << 30;
  g.sample.utilization_gpu_ratio = utilization;
  g.sample.has_processes = true;
  return g;
}

// What `charges` give `user` held by `held_by` in `state` (0 when nothing).
double ShareOf(const std::vector<GpuCharge>& charges, const std::string& user, ChargeHolder held_by,
               ChargeState state) {
  double share = 0;
  for (const GpuCharge& c : charges) {
    if (c.user == user && c.held_by == held_by && c.state == state) share += c.share;
  }
  return share;
}

double Total(const std::vector<GpuCharge>& charges) {
  double total = 0;
  for (const GpuCharge& c : charges) total += c.share;
  return total;
}

// A reservation held idle is its user's, although no process of theirs
// runs (the report charged it to nobody); another user's process on the
// GPU does not take a share of a leased GPU.
TEST(GpuChargeTest, ALeaseIsChargedToItsUserWithOrWithoutProcesses) {
  GpuView g = Gpu(0.0);
  g.lease = GpuLease{7, "alice", LeaseKind::kReservation};
  std::vector<GpuCharge> idle = ChargeGpu(g);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_DOUBLE_EQ(ShareOf(idle, "alice", ChargeHolder::kLease, ChargeState::kIdle), 1.0);
  g.processes = {Process(10, "bob")};
  g.sample.utilization_gpu_ratio = 0.9;
  std::vector<GpuCharge> busy = ChargeGpu(g);
  EXPECT_DOUBLE_EQ(ShareOf(busy, "alice", ChargeHolder::kLease, ChargeState::kBusy), 1.0);
  EXPECT_DOUBLE_EQ(Total(busy), 1.0);
  g.sample.health = GpuHealth::kLost;
  EXPECT_DOUBLE_EQ(ShareOf(ChargeGpu(g), "alice", ChargeHolder::kLease, ChargeState::kUnknown), 1.0);
}

// Outside leases the GPU's time is split among its compute processes'
// users, once per user however many processes each runs; a graphics
// client (the display server) is not charged; an empty GPU is nobody's.
TEST(GpuChargeTest, ProcessesOutsideLeasesSplitTheGpuByUser) {
  GpuView g = Gpu(0.01);
  EXPECT_TRUE(ChargeGpu(g).empty());
  g.processes = {Process(1, "root", ProcessType::kGraphics)};
  EXPECT_TRUE(ChargeGpu(g).empty());
  g.processes = {Process(1, "root", ProcessType::kGraphics), Process(2, "alice"), Process(3, "alice"),
                 Process(4, "bob")};
  std::vector<GpuCharge> charges = ChargeGpu(g);
  EXPECT_DOUBLE_EQ(ShareOf(charges, "alice", ChargeHolder::kProcess, ChargeState::kIdle), 0.5);
  EXPECT_DOUBLE_EQ(ShareOf(charges, "bob", ChargeHolder::kProcess, ChargeState::kIdle), 0.5);
  EXPECT_DOUBLE_EQ(Total(charges), 1.0);
  // A process whose owner could not be read is still charged, to its uid.
  g.processes = {Process(5, "")};
  g.processes[0].details.uid = 1003;
  EXPECT_DOUBLE_EQ(ShareOf(ChargeGpu(g), "1003", ChargeHolder::kProcess, ChargeState::kIdle), 1.0);
}

// Under MIG each instance is charged apart for its memory's share: a
// lease on the 3g.40gb instance, a process in one 1g.10gb, the other
// empty (nobody's).
TEST(GpuChargeTest, MigInstancesAreChargedForTheirShareOfTheGpu) {
  GpuView g = Gpu(0);
  g.sample.utilization_gpu_ratio.reset();
  g.sample.mig_instances = {testing::MigView(1, "3g.40gb", 0.0), testing::MigView(2, "1g.10gb", 0.6),
                            testing::MigView(3, "1g.10gb", 0.0)};
  g.mig_leases["MIG-1"] = GpuLease{3, "carol", LeaseKind::kRun};
  g.processes = {testing::InMig(42, 2)};
  std::vector<GpuCharge> charges = ChargeGpu(g);
  EXPECT_DOUBLE_EQ(ShareOf(charges, "carol", ChargeHolder::kLease, ChargeState::kIdle), 0.5);
  EXPECT_DOUBLE_EQ(ShareOf(charges, "alice", ChargeHolder::kProcess, ChargeState::kBusy), 0.125);
  EXPECT_DOUBLE_EQ(Total(charges), 0.625);
}

}  // namespace
}  // namespace tarmac::node
