// SPDX-License-Identifier: Apache-2.0
//
// What the lease service does each tick, under its lock (lease_service.h
// OnTick): Enforce reads the GPUs as the scheduler sees them, then runs the
// steps below in order, then SaveThenDecide. Between ticks, CheckRevoked
// ends revoked backfill leases whose grace has passed (EndRevoked).
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "leases/lease_core.h"
#include "node/node_view.h"

namespace tarmac::leases {

// One tick's work: the GPUs as read, grants, ends, policies; then saves
// and decides (SaveThenDecide).
void Enforce(LeaseCore& core, const node::NodeView& reading, sched::TimePoint now);
// Sends the signals asked for, saves, and (while saving works) decides and
// lends; a decision that cannot be saved is taken back.
void SaveThenDecide(LeaseCore& core, sched::TimePoint now);
// When the first revoked backfill lease's grace passes; empty when none is
// being revoked.
std::optional<sched::TimePoint> RevocationDeadline(const LeaseCore& core, sched::TimePoint now);
// Records what the Slurm actions the idle policy queued did (run after the
// tick, without the lock): `results` in the order of `actions`.
void RecordSlurmResults(LeaseCore& core, const std::vector<SchedulerClaims::SlurmAction>& actions,
                        const std::vector<Status>& results, sched::TimePoint now);

// --- the steps -------------------------------------------------------------
// The idle policy (lease_idle.cc): leases with no SM activity from their
// owner's processes for their idle timeout are warned, then acted on.
void CheckIdle(LeaseCore& core, const node::NodeView& reading, sched::TimePoint now);
// Ends leases on MIG instances gone from their GPU's layout (mig_leases.cc).
void CheckMigInstances(LeaseCore& core, const node::NodeView& reading, sched::TimePoint now);
// Marks the free instances with processes outside any lease (mig_leases.cc).
void MarkMigForeign(LeaseCore& core, const node::NodeView& reading);
// Asks backfill's gate which GPUs and MIG instances accept backfill now
// (`by_gpu`: the lease on each GPU index) and marks their slots
// (lease_backfill.cc).
void MarkBackfill(LeaseCore& core, const node::NodeView& reading, const std::map<int, int64_t>& by_gpu,
                  sched::TimePoint now);
// What each lender's GPU shows; recalls the loans that must end and notes
// the GPUs that may be lent (lease_backfill.cc).
void WatchLoans(LeaseCore& core, const node::NodeView& reading, sched::TimePoint now);
// After a decision: lends the GPUs offered to queued backfill requests.
void GrantLoans(LeaseCore& core, sched::TimePoint now);
// Kills the revoked leases whose grace has passed and ends those handed
// over; whether it killed or ended any.
bool CheckRevoked(LeaseCore& core, sched::TimePoint now);

}  // namespace tarmac::leases
