// SPDX-License-Identifier: Apache-2.0
#include "leases/gpu_drains.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/json_fields.h"
#include "common/terminal_text.h"
#include "leases/lease_text.h"
#include "node/health_verdict.h"
#include "node/node_json.h"

namespace tarmac::leases {
namespace {

using nlohmann::json;

// The GPU `name` names (an index, as nvidia-smi and CUDA_VISIBLE_DEVICES
// name it, or a UUID) among the last reading's.
Result<const sched::GpuSlot*> FindGpu(const LeaseCore& core, const std::string& name) {
  if (!core.has_gpus) return Status::Unavailable("the agent has not read the GPUs yet");
  for (const sched::GpuSlot& s : core.slots) {
    if (s.uuid == name || std::to_string(s.index) == name) return &s;
  }
  return Status::NotFound(
      fmt::format("no GPU {} here (an index 0 to {}, or a UUID)", ForTerminal(name), core.slots.size() - 1));
}

Status RequireAdmin(const sched::Caller& caller, const char* what) {
  if (caller.is_admin) return Status::OK();
  return Status::PermissionDenied(fmt::format("only root or a member of the admin group may {} a GPU", what));
}

// The lease holding GPU `index` whole, if any.
const sched::Lease* HolderOf(const LeaseCore& core, int index) {
  auto held = core.LeasedGpus();
  auto it = held.find(index);
  return it == held.end() ? nullptr : core.book.FindLease(it->second);
}

// Records the drain of GPU `s` and tells the holder of a lease on it.
void Drain(LeaseCore& core, const sched::GpuSlot& s, node::GpuDrain drain, const Actor& actor) {
  std::string detail = fmt::format("GPU {} ({}) drained by {}: {}", s.index, s.uuid, drain.by, drain.reason);
  core.drains[s.uuid] = std::move(drain);
  core.SaveDrains();
  MarkDrained(core.drains, &core.slots);
  core.Event("gpu_drained", 0, actor.uid, actor.name, {s.index}, actor, detail);
  if (const sched::Lease* l = HolderOf(core, s.index)) {
    core.Event("gpu_drained", l->id, l->uid, l->user, {s.index}, actor,
               detail + "; the lease keeps it until it ends, no new lease gets it");
  }
}

}  // namespace

void MarkDrained(const std::map<std::string, node::GpuDrain>& drains, std::vector<sched::GpuSlot>* slots) {
  for (sched::GpuSlot& s : *slots) {
    if (drains.count(s.uuid) != 0) {
      s.is_healthy = false;
      s.is_drain_overridable = false;  // Drained by hand: undrain it instead.
    }
  }
}

json DrainsToJson(const std::map<std::string, node::GpuDrain>& drains,
                  const std::map<std::string, int64_t>& xids_cleared_unix) {
  json j = json::object();
  for (const auto& [uuid, d] : drains) j[uuid] = node::GpuDrainToJson(d);
  return json{{"drains", std::move(j)}, {"xids_cleared_unix", xids_cleared_unix}};
}

Status DrainsFromJson(const json& record, std::map<std::string, node::GpuDrain>* drains,
                      std::map<std::string, int64_t>* xids_cleared_unix) {
  auto listed = record.is_object() ? record.find("drains") : record.end();
  if (!record.is_object() || listed == record.end() || !listed->is_object())
    return Status::Corruption("drain record: drains: expected an object");
  for (const auto& [uuid, d] : listed->items()) {
    if (!d.is_object())
      return Status::Corruption(fmt::format("drain of {}: not an object", ForTerminal(uuid)));
    (*drains)[uuid] = node::GpuDrainFromJson(d);
  }
  if (auto cleared = record.find("xids_cleared_unix"); cleared != record.end()) {
    if (!cleared->is_object())
      return Status::Corruption("drain record: xids_cleared_unix: expected an object");
    for (const auto& [uuid, t] : cleared->items()) {
      if (!t.is_number_integer())
        return Status::Corruption(fmt::format("xids_cleared_unix of {}: not an integer", ForTerminal(uuid)));
      (*xids_cleared_unix)[uuid] = t.get<int64_t>();
    }
  }
  return Status::OK();
}

Result<json> OnDrain(LeaseCore& core, const ApiCall& c) {
  if (Status s = RequireAdmin(c.caller, "drain"); !s.ok()) return s;
  std::string name;
  std::string reason;
  JsonFields f(c.params, "params");
  f.Get("gpu", &name);
  f.Get("reason", &reason);
  if (!f.ok()) return f.status();
  if (reason.empty() || reason.size() > kMaxDrainReasonBytes || !IsTerminalSafe(reason)) {
    return Status::InvalidArgument(fmt::format(
        "params.reason: 1 to {} bytes of printable text (no control characters)", kMaxDrainReasonBytes));
  }
  Result<const sched::GpuSlot*> gpu = FindGpu(core, name);
  if (!gpu.ok()) return gpu.status();
  const sched::GpuSlot& s = *gpu.value();
  if (auto it = core.drains.find(s.uuid); it != core.drains.end()) {
    return Status::FailedPrecondition(fmt::format("GPU {} is already drained by {} since {}: {}", s.index,
                                                  it->second.by, UtcText(it->second.since_unix),
                                                  it->second.reason));
  }
  int64_t now_unix = static_cast<int64_t>(core.Base().ToUnix(c.now));
  Drain(core, s, node::GpuDrain{c.caller.user, reason, now_unix}, Actor{c.caller.uid, c.caller.user});
  const sched::Lease* holder = HolderOf(core, s.index);
  return json{{"gpu", s.index},
              {"uuid", s.uuid},
              {"drained", node::GpuDrainToJson(core.drains[s.uuid])},
              {"lease", holder != nullptr ? json(holder->id) : json(nullptr)}};
}

Result<json> OnUndrain(LeaseCore& core, const ApiCall& c) {
  if (Status s = RequireAdmin(c.caller, "undrain"); !s.ok()) return s;
  std::string name;
  JsonFields f(c.params, "params");
  f.Get("gpu", &name);
  if (!f.ok()) return f.status();
  Result<const sched::GpuSlot*> gpu = FindGpu(core, name);
  if (!gpu.ok()) return gpu.status();
  const sched::GpuSlot& s = *gpu.value();
  auto it = core.drains.find(s.uuid);
  auto evidence = core.drain_evidence.find(s.index);
  bool has_xids = evidence != core.drain_evidence.end() && evidence->second.has_xids;
  if (it == core.drains.end() && !has_xids)
    return Status::FailedPrecondition(fmt::format("GPU {} is not drained", s.index));
  std::string detail = it != core.drains.end()
                           ? fmt::format("GPU {} ({}) undrained by {} (drained by {}: {})", s.index, s.uuid,
                                         c.caller.user, it->second.by, it->second.reason)
                           : fmt::format("GPU {} ({}): its Xids cleared by {} ({})", s.index, s.uuid,
                                         c.caller.user, WhyToDrain(core, s.index));
  if (it != core.drains.end()) core.drains.erase(it);
  // The Xids seen on it stop counting, now and after a restart: the admin
  // vouched for it (a reset, say).
  core.xids_cleared_unix[s.uuid] = static_cast<int64_t>(core.Base().ToUnix(c.now));
  core.SaveDrains();
  if (core.on_undrain) core.on_undrain(s.uuid);
  // Given out again from the next reading on, if that says it is healthy.
  core.Event("gpu_undrained", 0, c.caller.uid, c.caller.user, {s.index}, Actor{c.caller.uid, c.caller.user},
             detail);
  return json{{"gpu", s.index}, {"uuid", s.uuid}};
}

std::string WhyToDrain(const LeaseCore& core, int index) {
  if (index < 0 || static_cast<size_t>(index) >= core.slots.size()) return "";
  if (auto d = core.drains.find(core.slots[static_cast<size_t>(index)].uuid); d != core.drains.end())
    return fmt::format("drained by {}: {}", d->second.by, d->second.reason);
  auto e = core.drain_evidence.find(index);
  return e != core.drain_evidence.end() ? fmt::format("{}", fmt::join(e->second.reasons, "; ")) : "";
}

void NoteDrainEvidence(LeaseCore& core, const node::NodeView& reading) {
  core.drain_evidence.clear();
  for (const node::GpuView& g : reading.gpus) {
    node::HealthVerdict v = node::JudgeGpu(g);
    if (v.verdict == node::Verdict::kDrain) core.drain_evidence[g.info.index] = std::move(v);
  }
}

void AutoDrain(LeaseCore& core, const node::NodeView& reading, sched::TimePoint now) {
  if (!core.policy.is_auto_drain) return;
  for (const node::GpuView& g : reading.gpus) {
    auto evidence = core.drain_evidence.find(g.info.index);
    if (core.drains.count(g.info.uuid) != 0 || evidence == core.drain_evidence.end()) continue;
    auto slot = std::find_if(core.slots.begin(), core.slots.end(),
                             [&](const sched::GpuSlot& s) { return s.uuid == g.info.uuid; });
    if (slot == core.slots.end()) continue;
    int64_t now_unix = static_cast<int64_t>(core.Base().ToUnix(now));
    Drain(core, *slot, node::GpuDrain{"policy", WhyToDrain(core, g.info.index), now_unix}, Actor{});
  }
}

}  // namespace tarmac::leases
