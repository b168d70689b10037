// SPDX-License-Identifier: Apache-2.0
#include "sched/zombies.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "node/gpu_marks.h"

namespace tarmac::sched {

bool ZombieTracker::IsExempt(const node::ProcessDetails& d) const {
  if (std::find(policy_.allowlist.begin(), policy_.allowlist.end(), d.name) != policy_.allowlist.end())
    return true;
  return !policy_.includes_system_users && d.uid >= 0 && d.uid < 1000;
}

void ZombieTracker::Observe(const node::NodeView& node_view, std::chrono::steady_clock::time_point now,
                            const LeaseOf& lease_of) {
  std::map<Key, Seen> still;
  for (const node::GpuView& g : node_view.gpus) {
    for (const node::ProcessView& p : g.processes) {
      const node::ProcessDetails& d = p.details;
      bool at_zero = p.process.sm_utilization_ratio ? *p.process.sm_utilization_ratio == 0
                                                    : p.process.gpu_instance_id && node::IsIdleHolding(p, g);
      bool holds_idle = d.exists && p.process.used_memory_bytes &&
                        *p.process.used_memory_bytes >= policy_.min_memory_bytes && at_zero;
      if (!holds_idle || IsExempt(d)) continue;
      std::optional<int64_t> lease = lease_of ? lease_of(g, p) : std::nullopt;
      bool is_orphaned = d.parent_pid <= 1;
      if (lease && !is_orphaned) continue;
      Key key{g.info.index, p.process.pid, d.start_ticks};
      auto it = idle_.find(key);
      Seen seen;
      seen.idle_since = it != idle_.end() ? it->second.idle_since : now;
      ZombieEvidence& e = seen.evidence;
      e.gpu_index = g.info.index;
      e.gpu_uuid = g.info.uuid;
      e.pid = p.process.pid;
      e.start_ticks = d.start_ticks;
      e.uid = d.uid;
      e.user = d.user;
      e.name = d.name;
      e.command = d.command;
      e.parent_pid = d.parent_pid;
      e.is_orphaned = is_orphaned;
      e.lease_id = lease;
      e.memory_bytes = *p.process.used_memory_bytes;
      e.idle_for = std::chrono::duration_cast<std::chrono::seconds>(now - seen.idle_since);
      e.why =
          fmt::format("holds {} at 0 % SM for {} s, {}{}", FormatBytes(e.memory_bytes), e.idle_for.count(),
                      lease ? fmt::format("in lease {}", *lease) : std::string("outside any lease"),
                      e.is_orphaned ? ", orphaned (its parent is gone)" : "");
      still.emplace(key, std::move(seen));
    }
  }
  idle_ = std::move(still);
  last_observed_ = now;
}

std::vector<ZombieEvidence> ZombieTracker::Zombies() const {
  std::vector<ZombieEvidence> zombies;
  for (const auto& [key, seen] : idle_) {
    if (last_observed_ - seen.idle_since >= policy_.idle_for) zombies.push_back(seen.evidence);
  }
  std::stable_sort(zombies.begin(), zombies.end(), [](const ZombieEvidence& a, const ZombieEvidence& b) {
    return a.memory_bytes > b.memory_bytes;
  });
  return zombies;
}

}  // namespace tarmac::sched
