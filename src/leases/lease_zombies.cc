// SPDX-License-Identifier: Apache-2.0
//
// zombies and zombies.kill (lease_api.h): the zombies the tracker found,
// terminated for their owner or an admin through the verified path, each
// refusal an event.
#include <fmt/format.h>
#include <signal.h>

#include "ipc/method_table.h"
#include "leases/lease_api.h"
#include "sched/zombies_json.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

using nlohmann::json;

namespace {

Result<json> KillZombies(LeaseCore& core, const json& params, const sched::Caller& caller, TimePoint now) {
  std::optional<int64_t> only;
  if (params.contains("pid")) {
    Result<int64_t> pid = ipc::IdParam(params, "pid");
    if (!pid.ok()) return pid.status();
    only = pid.value();
  }
  sched::ZombieKills kills;
  bool matched = false;
  Actor actor{caller.uid, caller.user};
  for (const sched::ZombieEvidence& z : core.zombies.Zombies()) {
    if (only && z.pid != *only) continue;
    matched = true;
    sched::ZombieKill entry{z.pid, z.gpu_index, z.user, ""};
    if (!caller.is_admin && caller.uid != z.uid) {
      entry.why =
          fmt::format("pid {} belongs to {}; only its owner or an admin may terminate it", z.pid, z.user);
      core.Event("refused", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, actor,
                 "zombies.kill: " + entry.why);
      kills.refused.push_back(entry);
      continue;
    }
    Status s = core.process_control->Signal({z.pid, z.start_ticks}, z.uid, SIGTERM);
    if (!s.ok()) {
      entry.why = s.message();
      core.Event("zombie_skipped", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, actor,
                 fmt::format("pid {} not signalled: {}", z.pid, s.message()));
      kills.skipped.push_back(entry);
      continue;
    }
    core.Event("zombie_terminated", z.lease_id.value_or(0), z.uid, z.user, {z.gpu_index}, actor,
               fmt::format("SIGTERM to pid {} ({}): {}", z.pid, z.name, z.why));
    core.signaller.Watch(z.lease_id.value_or(0), z.uid, {{z.pid, z.start_ticks}},
                         now + core.policy.kill_grace);
    kills.terminated.push_back(entry);
  }
  if (only && !matched)
    return Status::NotFound(fmt::format("pid {} is not a zombie (see tarmac zombies)", *only));
  return sched::ZombieKillsToJson(kills);
}

}  // namespace

Result<json> OnZombies(LeaseCore& core, const ApiCall&) {
  return sched::ZombiesToJson({core.zombies.policy(), core.policy.terminates_zombies ? "terminate" : "report",
                               core.zombies.Zombies()});
}

Result<json> OnZombiesKill(LeaseCore& core, const ApiCall& c) {
  return KillZombies(core, c.params, c.caller, c.now);
}

}  // namespace tarmac::leases
