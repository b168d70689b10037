// SPDX-License-Identifier: Apache-2.0
//
// Other schedulers' GPUs as leases: the kubelet's allocations as pod
// leases (pod_leases.cc, docs/kubernetes.md), and the claims that make
// backfill give way to the kubelet and Slurm (backfill_claims.cc). Slurm
// jobs' leases come through the API (lease_api.h OnSlurmProlog).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "leases/lease_core.h"
#include "node/node_view.h"

namespace tarmac::leases {

// Backfill gives way to every other holder: true when no backfill lease
// holds a device `uuids` names, on its GPU or on its instances. Otherwise
// those leases are revoked for `claim` (another scheduler's: "Slurm job
// 42"), with the grace and events of any revocation, the devices are kept
// from every other grant for `claim` until it asks again and finds them
// free (or kHandoverBound past the grace), and it is false.
bool GiveWay(LeaseCore& core, const std::vector<std::string>& uuids, const std::string& claim,
             sched::TimePoint now);
// The claim a pod's Allocate of `uuids` makes.
std::string PodClaim(const std::vector<std::string>& uuids);
// One try of LeaseService::HoldForPod, saved before it returns: true once
// held, false while backfill gives way (its revocation saved).
Result<bool> TryHoldForPod(LeaseCore& core, const std::vector<std::string>& uuids, sched::TimePoint now);
// LeaseService::SyncPods under its lock.
void SyncPods(LeaseCore& core, const std::map<std::string, node::KubernetesNames>& by_uuid,
              sched::TimePoint now);

}  // namespace tarmac::leases
