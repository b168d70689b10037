// SPDX-License-Identifier: Apache-2.0
//
// What the lease service does each tick, under its lock (lease_service.h
// OnTick): Enforce reads the GPUs as the scheduler sees them, then runs the
// steps below in order, then SaveThenDecide. Between ticks (OnWake),
// CheckRevoked ends revoked backfill leases whose grace has passed, and a
// backfill gate's opening asks for a reading.
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
// When the lease thread next acts between ticks: the first revoked backfill
// lease's grace or hand-over look, or a GPU's backfill gate opening while a
// backfill request waits (GateOpening); empty when none.
std::optional<sched::TimePoint> NextWake(const LeaseCore& core, sched::TimePoint now);
// When a GPU's backfill gate opens by time alone (its settle or idle_for
// running out) while a backfill request waits and no reading was asked for
// that opening yet; empty otherwise. At that time a reading (asked by
// AskReadingAtGateOpening) lets the GPU take backfill at once rather than
// at the next tick: at a 1 s sampling interval, up to a second a gap.
std::optional<sched::TimePoint> GateOpening(const LeaseCore& core);
// Asks for a reading once the GateOpening has come.
void AskReadingAtGateOpening(LeaseCore& core, sched::TimePoint now);
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
// Asks for a reading at once for revoked lease `l` (runtime `rt`) once the
// processes the last reading listed on its GPUs have exited, unless one
// was asked for since it was let go (within 100 ms).
void AskReadingOnceExited(LeaseCore& core, const sched::Lease& l, LeaseRuntime* rt, sched::TimePoint now);

}  // namespace tarmac::leases
