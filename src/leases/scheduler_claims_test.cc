// SPDX-License-Identifier: Apache-2.0
// Other schedulers' claims: a claimed device (and its GPU and instances)
// is kept from every grant until the claim is dropped or expires; a
// renewed claim keeps its first expiry; Slurm actions are taken once.
#include "leases/scheduler_claims.h"

#include <gtest/gtest.h>

namespace tarmac::leases {
namespace {

using std::chrono::seconds;

std::vector<sched::GpuSlot> TwoGpusOneWithMig() {
  std::vector<sched::GpuSlot> slots(2);
  slots[0].index = 0;
  slots[0].uuid = "GPU-a";
  slots[1].index = 1;
  slots[1].uuid = "GPU-b";
  slots[1].mig.resize(2);
  slots[1].mig[0].uuid = "MIG-b1";
  slots[1].mig[1].uuid = "MIG-b2";
  return slots;
}

TEST(SchedulerClaimsTest, AClaimedGpuAndItsInstancesAreMarkedUntilTheClaimExpires) {
  SchedulerClaims claims;
  sched::TimePoint t0{};
  claims.Hold("Slurm job 42", {"GPU-b"}, t0 + seconds(10), "backfill lease 3 gives way first");
  std::vector<sched::GpuSlot> slots = TwoGpusOneWithMig();
  claims.MarkClaimed(t0 + seconds(9), &slots);
  EXPECT_FALSE(slots[0].has_foreign_processes);
  EXPECT_TRUE(slots[1].has_foreign_processes);
  EXPECT_TRUE(slots[1].mig[0].has_foreign_processes);
  EXPECT_TRUE(slots[1].mig[1].has_foreign_processes);
  ASSERT_NE(claims.Find("Slurm job 42"), nullptr);
  EXPECT_EQ(claims.Find("Slurm job 42")->waiting_for, "backfill lease 3 gives way first");

  slots = TwoGpusOneWithMig();
  claims.MarkClaimed(t0 + seconds(10), &slots);  // Expired: dropped, nothing marked.
  EXPECT_FALSE(slots[1].has_foreign_processes);
  EXPECT_EQ(claims.Find("Slurm job 42"), nullptr);
  EXPECT_EQ(claims.size(), 0u);
}

TEST(SchedulerClaimsTest, AClaimedInstanceMarksItsGpuButNotItsSibling) {
  SchedulerClaims claims;
  sched::TimePoint t0{};
  claims.Hold("a pod", {"MIG-b2"}, t0 + seconds(10), "");
  std::vector<sched::GpuSlot> slots = TwoGpusOneWithMig();
  claims.MarkClaimed(t0, &slots);
  EXPECT_TRUE(slots[1].has_foreign_processes);  // No whole-GPU grant takes it.
  EXPECT_FALSE(slots[1].mig[0].has_foreign_processes);
  EXPECT_TRUE(slots[1].mig[1].has_foreign_processes);
}

TEST(SchedulerClaimsTest, ARenewedClaimKeepsItsFirstExpiryAndADroppedOneIsGone) {
  SchedulerClaims claims;
  sched::TimePoint t0{};
  claims.Hold("Slurm job 42", {"GPU-a"}, t0 + seconds(10), "first");
  claims.Hold("Slurm job 42", {"GPU-a"}, t0 + seconds(100), "again");
  EXPECT_EQ(claims.Find("Slurm job 42")->expires_at, t0 + seconds(10));
  EXPECT_EQ(claims.Find("Slurm job 42")->waiting_for, "again");
  claims.Drop("Slurm job 42");
  std::vector<sched::GpuSlot> slots = TwoGpusOneWithMig();
  claims.MarkClaimed(t0, &slots);
  EXPECT_FALSE(slots[0].has_foreign_processes);
}

TEST(SchedulerClaimsTest, SlurmActionsAreTakenOnceInOrder) {
  SchedulerClaims claims;
  SchedulerClaims::SlurmAction a;
  a.job = "1";
  claims.QueueSlurmAction(a);
  a.job = "2";
  claims.QueueSlurmAction(a);
  std::vector<SchedulerClaims::SlurmAction> taken = claims.TakeSlurmActions();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].job, "1");
  EXPECT_EQ(taken[1].job, "2");
  EXPECT_TRUE(claims.TakeSlurmActions().empty());
}

}  // namespace
}  // namespace tarmac::leases
