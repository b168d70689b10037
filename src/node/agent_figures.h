// SPDX-License-Identifier: Apache-2.0
//
// What /metrics shows of leases, backfill batches and the doctor's findings
// (docs/metrics.md): counted by the lease service, the agent's batch
// supervisor and its doctor, rendered by metrics (RenderLeaseFamilies).
// Plain data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace tarmac::node {

struct AgentFigures {
  std::map<std::string, int64_t> leases_by_priority;  // Held now, by priority name.
  int64_t queued = 0;
  int64_t backfill_preemptions = 0;  // Backfill leases revoked since the agent started.
  double backfill_gpu_seconds = 0;   // GPU-seconds held by backfill leases since the agent started.
  // Backfill batches, as their runners last wrote (all batches kept).
  std::map<std::string, int64_t> batches_by_state;
  int64_t batch_requests_done = 0;    // Result lines.
  int64_t batch_requests_failed = 0;  // Error lines.
  int64_t batch_completion_tokens = 0;
  // The doctor's findings of its last scheduled run, by (check, severity);
  // null before the first run. Shared: one map per run, however often read.
  using FindingCounts = std::map<std::pair<std::string, std::string>, int64_t>;
  std::shared_ptr<const FindingCounts> doctor_findings;
  // With [kubernetes]: whether the device plugin is registered with the
  // kubelet, and whether the last pod-resources List worked.
  std::optional<bool> kube_plugin_registered;
  std::optional<bool> kube_pod_resources_up;
  int64_t kube_pod_leases = 0;  // Leases of kind pod held now.

  // Equal figures render the same text (doctor findings: the same run).
  bool operator==(const AgentFigures&) const = default;
};

}  // namespace tarmac::node
