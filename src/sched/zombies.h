// SPDX-License-Identifier: Apache-2.0
//
// Zombie GPU processes: processes holding at least `min_memory_bytes` of
// GPU memory at 0 % SM for at least `idle_for`, with the evidence an
// operator needs before acting (how much, how long, whose, under which
// lease, parent alive or not). Never a process on the allowlist (inference
// servers, Xorg, the persistence daemon), nor one of a system user unless
// configured. A process is tracked by (GPU, pid, start time), so a reused
// PID starts afresh. Pure: snapshots and time are passed in.
//
// Thread safety: none; the agent serializes Observe and Zombies.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "node/node_view.h"

namespace tarmac::sched {

struct ZombiePolicy {
  int64_t min_memory_bytes = int64_t{1} << 30;
  std::chrono::milliseconds idle_for = std::chrono::minutes(30);
  // Process names (comm) never reported.
  std::vector<std::string> allowlist = {"Xorg", "nvidia-persistenced", "ollama", "tritonserver",
                                        "dcgm-exporter"};
  bool includes_system_users = false;  // Users with uid under 1000 (and root).

  bool operator==(const ZombiePolicy&) const = default;
};

struct ZombieEvidence {
  int gpu_index = 0;
  std::string gpu_uuid;
  int64_t pid = 0;
  int64_t start_ticks = 0;
  int64_t uid = -1;
  std::string user;
  std::string name;
  std::string command;
  int64_t parent_pid = 0;
  bool is_orphaned = false;  // Reparented to init: whoever started it is gone.
  int64_t memory_bytes = 0;
  std::chrono::seconds idle_for{0};
  std::optional<int64_t> lease_id;  // Empty: outside any lease.
  std::string why;                  // In words.
};

class ZombieTracker {
 public:
  explicit ZombieTracker(ZombiePolicy policy = ZombiePolicy()) : policy_(std::move(policy)) {}

  // The live lease `process` on `gpu` is part of; empty when none.
  using LeaseOf =
      std::function<std::optional<int64_t>(const node::GpuView& gpu, const node::ProcessView& process)>;

  // Notes, for every GPU process, whether it holds memory at 0 % SM now
  // (under MIG: in an instance whose engine showed no activity, GPM), and
  // since when; forgets processes that are gone. A process inside a
  // live lease is not a zombie (the idle-lease policy covers it) unless it
  // is orphaned.
  void Observe(const node::NodeView& node_view, std::chrono::steady_clock::time_point now,
               const LeaseOf& lease_of = {});

  // The zombies as of the last Observe, biggest memory first.
  std::vector<ZombieEvidence> Zombies() const;

  const ZombiePolicy& policy() const { return policy_; }
  // A new policy (a config reload); the processes already watched keep the
  // time they were first seen idle.
  void SetPolicy(ZombiePolicy policy) { policy_ = std::move(policy); }

 private:
  using Key = std::tuple<int, int64_t, int64_t>;  // GPU index, pid, start ticks.
  struct Seen {
    std::chrono::steady_clock::time_point idle_since;
    ZombieEvidence evidence;  // As of the last Observe.
  };
  bool IsExempt(const node::ProcessDetails& d) const;

  ZombiePolicy policy_;
  std::map<Key, Seen> idle_;  // Processes idle-holding now.
  std::chrono::steady_clock::time_point last_observed_;
};

}  // namespace tarmac::sched
