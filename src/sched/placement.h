// SPDX-License-Identifier: Apache-2.0
//
// Which GPUs a request gets. A GPU is free (the one meaning `tarmac pick`,
// `tarmac run`, backfill and `tarmac fleet pick` share) when its health
// verdict is not drain, no exclusive lease holds it, no process outside a
// lease runs on it, its utilization outside a lease is at most the busy
// limit (work tarmac cannot see, say in another PID namespace), it is not in
// MIG mode, and it has the free memory the request asks for. A request for
// a count of GPUs takes degraded GPUs only when the ok ones cannot serve
// it. Among free GPUs, a multi-GPU request
// prefers GPUs joined by NVLink, then under one PCIe switch, then on one
// NUMA node; it takes the group that fits most tightly (best fit), so large
// groups stay whole for large requests, and inside a group larger than
// needed, the finer groups the same way.
// Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tarmac::sched {

// A MIG instance as placement sees it.
struct MigSlot {
  std::string uuid;     // "MIG-..."
  std::string profile;  // "1g.10gb"
  bool is_leased = false;
  bool has_foreign_processes = false;  // Processes outside any lease in it.
  int64_t memory_total_bytes = 0;
  // Backfill may start in it: judged per instance as GpuSlot's is per GPU.
  bool accepts_backfill = true;
};

struct GpuSlot {
  int index = 0;
  std::string uuid;
  bool is_healthy = true;              // Its verdict is not drain (node/health_verdict.h).
  bool is_degraded = false;            // Its verdict is degraded: taken after the ok ones.
  bool is_leased = false;              // An exclusive lease holds it.
  bool has_foreign_processes = false;  // Processes outside any lease.
  // Its only processes are those of a lease that has just ended, which the
  // driver lists until a reading shows them gone: on their way out. A
  // request may claim it from a backfill lease on it (schedule.h), never
  // be granted it before that reading.
  bool is_emptying = false;
  bool is_busy = false;  // Utilization above the busy limit outside any lease.
  // Not healthy on readable evidence only (not unreadable, not drained by
  // hand): a request that allows unhealthy GPUs may take it.
  bool is_drain_overridable = false;
  int64_t memory_free_bytes = 0;
  int64_t memory_total_bytes = 0;  // 0: unknown (then no request is refused for memory).
  int nvlink_domain = -1;          // GPUs joined all-to-all by NVLink share one; -1: none.
  int pcie_switch = -1;            // GPUs under one PCIe switch share one; -1: unknown.
  int numa_node = -1;
  // Backfill may start on it: idle long enough, inside the allowed hours
  // and limits (the lease service judges; schedule.h).
  bool accepts_backfill = true;
  // In MIG mode: never granted whole; its instances are (mig_placement.h).
  bool is_mig_enabled = false;
  std::vector<MigSlot> mig;
};

struct GpuWants {
  int gpu_count = 1;               // Used when `uuids` is empty.
  std::vector<std::string> uuids;  // Exactly these GPUs.
  int64_t min_free_memory_bytes = 0;
  // One MIG instance of this profile ("1g.10gb"), or, with `uuids` naming
  // one MIG UUID, that instance (mig_placement.h).
  std::string mig_profile;
  // An admin who knows: GPUs to drain on readable evidence may be taken
  // (GpuSlot::is_drain_overridable), never one unreadable or drained by hand.
  bool allows_unhealthy = false;
};

// Whether `wants` asks for a MIG instance rather than whole GPUs.
bool WantsMig(const GpuWants& wants);

// What a decision in progress has changed about a GPU, without copying the
// GPU list: kTaken (granted or reserved in this decision) makes it unusable;
// kReleased (its lease will have ended) makes a leased GPU usable.
enum class Override : uint8_t { kNone = 0, kTaken, kReleased };
using Overrides = std::vector<Override>;  // Indexed like the GPUs; may be empty.

// Why a GPU is not free, in the order it is judged; kFree when it is.
enum class NotFree : uint8_t {
  kFree = 0,
  kTaken,             // By the decision in progress (Override::kTaken).
  kDrain,             // Its verdict is drain.
  kMig,               // In MIG mode: its instances are granted, not it.
  kLeased,            // An exclusive lease holds it.
  kForeignProcesses,  // Processes outside any lease run on it.
  kBusy,              // Utilization above the limit outside any lease.
  kMemory,            // Less free memory than asked for.
};

// Whether `gpu` can be granted (whole) to a request needing
// `min_free_memory_bytes`, and if not the first reason why.
NotFree WhyNotFree(const GpuSlot& gpu, int64_t min_free_memory_bytes, Override change = Override::kNone);
inline bool IsFree(const GpuSlot& gpu, int64_t min_free_memory_bytes, Override change = Override::kNone) {
  return WhyNotFree(gpu, min_free_memory_bytes, change) == NotFree::kFree;
}

// GPU indices for `wants`, or empty when they do not fit now. `gpus` may
// be in any order (a tie between equally placed GPUs goes to the earlier:
// callers with a preference put it first); `overrides` is indexed by
// GpuSlot::index.
std::optional<std::vector<int>> PickGpus(const std::vector<GpuSlot>& gpus, const GpuWants& wants,
                                         const Overrides& overrides = {});

}  // namespace tarmac::sched
