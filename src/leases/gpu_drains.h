// SPDX-License-Identifier: Apache-2.0
//
// Drained GPUs: an administrator drains a GPU by hand (gpu.drain, `tarmac
// drain GPU --reason TEXT`) and undrains it (gpu.undrain); the health
// policy ([health] auto_drain) drains one whose verdict turns drain on
// critical evidence. A drained GPU is given to no new lease, whatever its
// readings say, until undrained; a lease already on it keeps it (its
// holder is told, by an event on its lease). Drains are saved with the
// leases (one "drain" record), shown on each GPU (node::GpuDrain: status,
// top, /metrics, fleet status, the device plugin) and told as events
// (gpu_drained, gpu_undrained) with who and why.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "leases/lease_api.h"
#include "node/node_view.h"
#include "sched/placement.h"

namespace tarmac::leases {

// The longest reason a drain keeps.
inline constexpr size_t kMaxDrainReasonBytes = 200;

// Marks each slot of a drained GPU not healthy.
void MarkDrained(const std::map<std::string, node::GpuDrain>& drains, std::vector<sched::GpuSlot>* slots);

// The "drain" record: {"drains": {uuid: {by, reason, since_unix}},
// "xids_cleared_unix": {uuid: when an admin last cleared its Xids}}, and
// back (a record of another shape is Corruption naming it).
nlohmann::json DrainsToJson(const std::map<std::string, node::GpuDrain>& drains,
                            const std::map<std::string, int64_t>& xids_cleared_unix);
Status DrainsFromJson(const nlohmann::json& record, std::map<std::string, node::GpuDrain>* drains,
                      std::map<std::string, int64_t>* xids_cleared_unix);

// gpu.drain {gpu: index or UUID, reason}: admins only.
Result<nlohmann::json> OnDrain(LeaseCore& core, const ApiCall& c);
// gpu.undrain {gpu}: admins only. Also clears the Xids counted against
// the GPU (a drain verdict on Xid evidence: the admin vouches for it after
// a reset), now and after restarts.
Result<nlohmann::json> OnUndrain(LeaseCore& core, const ApiCall& c);
// Why GPU `index` is given to no lease ("drained by root: fan rattles",
// "Xid 48"); empty when it is healthy.
std::string WhyToDrain(const LeaseCore& core, int index);
// Notes why each GPU of `reading` is to drain (LeaseCore::drain_evidence).
void NoteDrainEvidence(LeaseCore& core, const node::NodeView& reading);
// With [leases] auto_drain: drains each GPU of `reading` whose verdict is
// drain on its evidence, once, telling the holder of a lease on it.
void AutoDrain(LeaseCore& core, const node::NodeView& reading, sched::TimePoint now);

}  // namespace tarmac::leases
