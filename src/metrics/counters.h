// SPDX-License-Identifier: Apache-2.0
//
// Counters that no single snapshot holds: seconds each GPU spent idle, held
// idle and throttled (by reason), and what its idle time cost. Updated on
// the sampler thread after each tick (a few additions per GPU), read by
// scrapes; never on the scrape path's critical section for long.
//
// Thread safety: Update from one thread; Get from any.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "node/lease_marks.h"
#include "node/node_view.h"

namespace tarmac::metrics {

// A holder another scheduler names: a pod (namespace and pod set) or a
// Slurm job (slurm_job set), and the GPU's state while it held it ("busy",
// "idle", "unknown").
struct JobKey {
  std::string pod_namespace;
  std::string pod;
  std::string slurm_job;
  std::string state;
  auto operator<=>(const JobKey&) const = default;
};
struct JobSeconds {
  double seconds = 0;
  std::chrono::steady_clock::time_point last_held;
};

// A user charged for a GPU's time (node/gpu_charge.h): by whom it was
// held ("lease", "process") and its state ("busy", "idle", "unknown").
struct UserChargeKey {
  std::string user;
  std::string held_by;
  std::string state;
  auto operator<=>(const UserChargeKey&) const = default;
};
struct UserCharge {
  double seconds = 0;
  double cost = 0;  // At the configured price of the GPU's model.
  std::chrono::steady_clock::time_point last_held;
};

struct GpuCounters {
  double idle_seconds = 0;
  double held_idle_seconds = 0;
  double idle_cost = 0;
  // The idle spell going on now (0 when the GPU is not idle) and what it
  // has cost so far; the held-idle spell going on now.
  double idle_for_seconds = 0;
  double idle_for_cost = 0;
  double held_idle_for_seconds = 0;
  // Seconds by state, each second in exactly one: "busy" (5 % utilization
  // or more), "idle" (under 5 %, no process holding memory at 0 % SM),
  // "held_idle" (under 5 %, such a process), "unknown" (not readable).
  std::map<std::string, double> state_seconds;
  // Seconds a lease held the GPU, by (user, kind); a MIG instance's lease
  // counts its own seconds, so a GPU split among three leases counts three.
  std::map<std::pair<std::string, std::string>, double> lease_seconds;
  std::map<std::string, double> throttle_seconds;  // By reason name.
  // Seconds a Kubernetes pod or a Slurm job held the GPU (a MIG instance's
  // holder: its own seconds), by whether the GPU (instance) was busy, idle
  // or unreadable meanwhile. A holder's series outlive its hold by
  // kJobSeriesKeep, then are dropped: the label set stays bounded by the
  // holders of the last hour, and every scrape in between reads the final
  // count.
  std::map<JobKey, JobSeconds> job_seconds;
  // The GPU's time and its cost charged to each user (node::ChargeGpu),
  // kept like job_seconds: dropped kJobSeriesKeep after the last charge.
  std::map<UserChargeKey, UserCharge> user_charges;
};

class NodeCounters {
 public:
  // `price` gives the cost of one GPU-hour of a model.
  explicit NodeCounters(std::function<double(const std::string& model)> price);

  // Adds the time since the previous update (at most kMaxStep) to each
  // GPU's counters according to what `node_view` shows and who `marks` says
  // holds each GPU and MIG instance (node/lease_marks.h).
  void Update(const node::NodeView& node_view, const node::LeaseMarks& marks,
              std::chrono::steady_clock::time_point at);

  std::map<std::string, GpuCounters> Get() const;  // By GPU UUID.

  static constexpr std::chrono::seconds kMaxStep{10};
  static constexpr std::chrono::hours kJobSeriesKeep{1};

 private:
  std::function<double(const std::string&)> price_;
  std::optional<std::chrono::steady_clock::time_point> previous_;
  mutable Mutex mu_;
  std::map<std::string, GpuCounters> by_uuid_ GUARDED_BY(mu_);
};

}  // namespace tarmac::metrics
