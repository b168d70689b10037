// SPDX-License-Identifier: Apache-2.0
//
// How the lease API shows leases and queued requests (docs/protocol.md):
// a lease with how long it has been held and idle, its idle warning and
// foreign processes, its token only to its owner and admins; a queued
// request with its place and why it waits; an ended one with why.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "leases/lease_core.h"

namespace tarmac::leases {

// What lease.get answers for request or lease `id`: granted, queued or
// ended; kNotFound when the agent knows nothing of it.
Result<nlohmann::json> LeaseStateJson(const LeaseCore& core, int64_t id, const sched::Caller& viewer,
                                      sched::TimePoint now);
// {"state":"ended","reason":why,"ended_by":kind} (ended_by when known).
nlohmann::json EndedJson(const RequestMemory::Ended& e);
// A lease as answers show it; its token only to its owner and admins.
nlohmann::json LeaseJson(const LeaseCore& core, const sched::Lease& lease, const sched::Caller& viewer,
                         sched::TimePoint now);
nlohmann::json QueuedJson(const LeaseCore& core, const sched::Pending& pending, sched::TimePoint now);
// The same, as the structs the JSON is encoded from.
sched::LeaseShown ShowLease(const LeaseCore& core, const sched::Lease& lease, const sched::Caller& viewer,
                            sched::TimePoint now);
sched::PendingShown ShowPending(const LeaseCore& core, const sched::Pending& pending, sched::TimePoint now);
// The queue in the last decision's order.
std::vector<sched::PendingShown> ShowQueue(const LeaseCore& core, sched::TimePoint now);
// Every lease (as `viewer` sees it) and the queue.
sched::LeaseListing ShowListing(const LeaseCore& core, const sched::Caller& viewer, sched::TimePoint now);
// {"leases": [...]}, {"queue": [...]} (the queue in the last decision's order).
nlohmann::json LeasesJson(const LeaseCore& core, const sched::Caller& viewer, sched::TimePoint now);
nlohmann::json QueueJson(const LeaseCore& core, sched::TimePoint now);
// Why request `id` waits: "position 2: needs 2 GPUs, 1 free now".
std::string WaitReason(const LeaseCore& core, int64_t id);
// Why backfill's gate refuses the free GPUs among `marked` (with at least
// `memory` free), for the one that opens first: "GPU 3: idle 2m 00s of
// idle_for 10m 00s, opens in 8m 00s"; "" when it refuses none.
std::string BackfillRefusal(const LeaseCore& core, const std::vector<sched::GpuSlot>& marked, int64_t memory);
// Where request `id` stands in the last decision; null when not waiting.
const sched::Waiting* WaitingOf(const LeaseCore& core, int64_t id);

}  // namespace tarmac::leases
