// SPDX-License-Identifier: Apache-2.0
//
// One reading of the whole machine as plain data: every GPU (identity,
// sample, processes and who they are), what the agent knows beside the
// driver (Xid counts, leases), the host and the driver. Written by the
// sampler (or decoded from the agent's JSON); read by status, query, pick,
// metrics, the store and the lease service. Value types; thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "node/gpu_types.h"
#include "node/lease_kind.h"
#include "node/process_details.h"

namespace tarmac::node {

struct ProcessView {
  GpuProcess process;
  ProcessDetails details;
};

// Whether the process computes on the GPU (a compute context, or one the
// driver lists as both), not only draws on it.
inline bool IsCompute(const ProcessView& p) { return p.process.type != ProcessType::kGraphics; }

// A lease the agent holds on a GPU, as status and history see it.
struct GpuLease {
  int64_t id = 0;
  std::string user;
  LeaseKind kind = LeaseKind::kRun;
  bool is_revoking = false;               // A backfill lease being preempted (in its grace).
  std::string slurm_job = std::string();  // Kind slurm: the job id.
  // Its GPU's idle memory lent to this backfill lease, if any (leases/loans.h).
  int64_t lent_to = 0;
  std::string lent_to_user = std::string();

  bool is_backfill() const { return kind == LeaseKind::kBackfill; }
};

// A GPU an administrator drained by hand (`tarmac drain`), or the health
// policy drained on critical evidence: given to no new lease until
// undrained, whatever its readings say.
struct GpuDrain {
  std::string by;      // "alice", or "policy"
  std::string reason;  // As given (printable, at most 200 bytes).
  int64_t since_unix = 0;

  bool operator==(const GpuDrain&) const = default;
};

struct GpuView {
  GpuInfo info;
  GpuSample sample;
  std::vector<ProcessView> processes;
  // Mean utilization over the recent window, when asked for and available.
  std::optional<double> recent_utilization_ratio;
  // PCIe traffic from counter deltas between two reads (watch mode).
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  // Xid errors the agent's events thread has seen on this GPU.
  int64_t xid_count = 0;
  std::optional<GpuEvent> last_xid;
  std::map<int64_t, int64_t> xid_count_by_code;
  // Xids the history holds from before the agent (re)started, since the host
  // booted, by code (from the agent only): they count toward the health
  // verdict and the doctor as the agent's own do, until an admin undrains
  // the GPU.
  std::map<int64_t, int64_t> earlier_xid_count_by_code;
  // The agent's lease on this GPU, when any (from the agent only).
  std::optional<GpuLease> lease;
  // Its drain, when drained (from the agent only).
  std::optional<GpuDrain> drained;
  // Backfill leases on this GPU revoked for a waiting request since the
  // agent started (from the agent only).
  int64_t backfill_preemptions = 0;
  // The pod and container the kubelet allocated this GPU to, as its
  // pod-resources API last said (from the agent only, with [kubernetes]).
  std::optional<KubernetesNames> allocated_to;
  // The same for each MIG instance of the GPU, by its MIG UUID.
  std::map<std::string, GpuLease> mig_leases;
  std::map<std::string, KubernetesNames> mig_allocated_to;
};

struct NodeView {
  std::string hostname;
  std::string backend;  // "nvml" or "sim"
  // Why no GPU can be read at all (the driver is not loaded): set while the
  // agent waits to re-attach; `gpus` then holds the last GPUs it knew.
  std::string backend_error;
  SystemInfo system;
  std::chrono::system_clock::time_point taken_at;
  std::vector<GpuView> gpus;
};

}  // namespace tarmac::node
