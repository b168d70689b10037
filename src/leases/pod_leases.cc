// SPDX-License-Identifier: Apache-2.0
//
// Pod leases (scheduler_leases.h): the GPUs the kubelet hands to pods, in the
// same book as every other lease, so that no other lease is granted on them
// and listings, the idle policy and reports see them. The kubelet decides
// when a pod lease ends; the agent only follows what its APIs say.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/random_id.h"
#include "leases/callers.h"
#include "leases/lease_text.h"
#include "leases/scheduler_leases.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

namespace {

// Who a pod lease is for before the kubelet names the pod.
constexpr const char* kUnnamedPod = "kubelet";

std::string PodUser(const node::KubernetesNames& k) { return k.pod_namespace + "/" + k.pod; }

// A container's devices as leases hold them: its whole GPUs together (when
// any), then each MIG instance alone.
std::vector<std::vector<std::string>> SplitMigDevices(const std::vector<std::string>& uuids) {
  std::vector<std::vector<std::string>> out(1);
  for (const std::string& uuid : uuids) {
    if (nvidia::IsMigUuid(uuid)) {
      out.push_back({uuid});
    } else {
      out[0].push_back(uuid);
    }
  }
  if (out[0].empty()) out.erase(out.begin());
  return out;
}

}  // namespace

std::string PodClaim(const std::vector<std::string>& uuids) {
  return fmt::format("a pod (the kubelet's Allocate of {})", fmt::join(uuids, ","));
}

Result<bool> TryHoldForPod(LeaseCore& core, const std::vector<std::string>& uuids, TimePoint now) {
  if (!core.has_gpus) return Status::Unavailable("the agent has not read its GPUs yet");
  if (!core.CanSave(now))
    return Status::Unavailable(core.journal.problem() +
                               "; the agent makes no lease change until it can save it");
  std::set<int64_t> overlapping;
  for (const std::string& uuid : uuids) {
    int parent = -1;
    const sched::MigSlot* instance = sched::FindMigSlot(core.slots, uuid, &parent);
    auto slot = instance != nullptr ? core.slots.begin() + parent
                                    : std::find_if(core.slots.begin(), core.slots.end(),
                                                   [&](const sched::GpuSlot& g) { return g.uuid == uuid; });
    if (slot == core.slots.end()) return Status::NotFound(fmt::format("no GPU {} on this node", uuid));
    if (!slot->is_healthy) return Status::FailedPrecondition(fmt::format("GPU {} is not healthy", uuid));
    for (const auto& [id, l] : core.book.leases()) {
      if (std::find(l.uuids.begin(), l.uuids.end(), uuid) == l.uuids.end()) continue;
      if (l.priority == sched::Priority::kBackfill) continue;  // Gives way below.
      if (l.kind != node::LeaseKind::kPod) {
        return Status::FailedPrecondition(
            fmt::format("GPU {} is in lease {} of {} ({})", uuid, id, l.user, sched::LeaseKindName(l)));
      }
      overlapping.insert(id);
    }
  }
  if (!overlapping.empty()) {
    std::set<std::string> had;
    for (int64_t id : overlapping) {
      const sched::Lease& l = *core.book.FindLease(id);
      had.insert(l.uuids.begin(), l.uuids.end());
    }
    if (had == std::set<std::string>(uuids.begin(), uuids.end())) {
      return true;  // The kubelet asks again for what it has.
    }
  }
  LeaseCore::Undo undo = core.Checkpoint();
  for (int64_t id : overlapping) {
    core.EndLease(id, "pod_ended", "the kubelet allocated its GPUs anew", Actor{}, false, now);
  }
  if (!GiveWay(core, uuids, PodClaim(uuids), now)) {
    // Its revocation is saved; the kubelet's call asks again.
    if (Status saved = core.Flush(now); !saved.ok()) {
      core.Rollback(std::move(undo));
      return Status::Unavailable(fmt::format("{}; nothing was changed", saved.message()));
    }
    return false;
  }
  // Whole GPUs in one lease; each MIG instance in one of its own.
  for (std::vector<std::string>& devices : SplitMigDevices(uuids)) {
    sched::Lease lease;
    lease.uuids = std::move(devices);
    lease.kind = node::LeaseKind::kPod;
    lease.user = kUnnamedPod;
    Result<const sched::Lease*> held = core.GrantHeld(kAgentCaller, std::move(lease), Actor{0, "kubelet"},
                                                      "allocated to a pod by the kubelet", now);
    if (!held.ok()) {
      core.Rollback(std::move(undo));
      return held.status();
    }
  }
  if (Status saved = core.Flush(now); !saved.ok()) {
    core.Rollback(std::move(undo));
    return Status::Unavailable(fmt::format("{}; nothing was changed", saved.message()));
  }
  core.SendSignals(now);
  return true;
}

void SyncPods(LeaseCore& core, const std::map<std::string, node::KubernetesNames>& by_uuid, TimePoint now) {
  if (!core.has_gpus) return;
  std::set<std::string> covered;
  std::vector<int64_t> gone;
  for (const auto& [id, l] : core.book.leases()) {
    if (l.kind != node::LeaseKind::kPod) continue;
    const node::KubernetesNames* pod = nullptr;
    for (const std::string& uuid : l.uuids) {
      covered.insert(uuid);
      if (auto it = by_uuid.find(uuid); it != by_uuid.end() && pod == nullptr) pod = &it->second;
    }
    if (pod == nullptr) {
      // A pod that was listed has gone; one never listed yet may be a
      // moment from its first listing.
      if (l.user != kUnnamedPod || now - l.granted_at >= kPodGrace) gone.push_back(id);
      continue;
    }
    std::string user = PodUser(*pod);
    if (user != l.user || pod->container != l.command) {
      core.book.SetOwner(id, user, pod->container);
      core.SaveLease(*core.book.FindLease(id));
      core.Event("pod_named", id, l.uid, user, l.gpus, Actor{0, "kubelet"},
                 fmt::format("pod {} container {} holds GPU {}", user, pod->container, GpuList(l.gpus)));
    }
  }
  for (int64_t id : gone) {
    core.EndLease(id, "pod_ended", "no pod holds its GPUs any more (the kubelet's pod resources)", Actor{},
                  false, now);
  }
  // Allocations without a lease: one lease per pod container.
  std::map<std::string, std::vector<std::string>> unleased;  // "ns/pod/container" -> UUIDs.
  std::map<std::string, node::KubernetesNames> names;
  for (const auto& [uuid, pod] : by_uuid) {
    if (covered.count(uuid) != 0) continue;
    std::string key = PodUser(pod) + "/" + pod.container;
    unleased[key].push_back(uuid);
    names[key] = pod;
  }
  for (const auto& [key, all] : unleased) {
    for (std::vector<std::string>& uuids : SplitMigDevices(all)) {
      sched::Lease lease;
      lease.uuids = uuids;
      lease.kind = node::LeaseKind::kPod;
      lease.user = PodUser(names[key]);
      lease.command = names[key].container;
      std::string user = lease.user;
      Result<const sched::Lease*> held =
          core.GrantHeld(kAgentCaller, std::move(lease), Actor{0, "kubelet"},
                         "adopted from the kubelet's pod resources: " + key, now);
      if (!held.ok()) {
        core.Event("pod_conflict", 0, 0, user, {}, Actor{},
                   fmt::format("the kubelet lists GPUs {} for {} but the agent cannot lease them: {}",
                               fmt::join(uuids, ","), key, held.status().message()));
      }
    }
  }
  core.Flush(now).IgnoreError();  // Kept for the next try when it fails; the kubelet lists them again.
}

}  // namespace tarmac::leases
