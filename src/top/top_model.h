// SPDX-License-Identifier: Apache-2.0
//
// What `tarmac top` shows and the state of its screen: the data (the
// machine as the agent or a direct read saw it, decoded once into the
// structs the agent encodes from: the GPUs, leases, queue; the latest
// event, each GPU's recent utilization, the GPU processes with what /proc
// says of them) and the UI state (sort, filter, selection, overlays).
// Plain data; the screen is a pure function of both (top_view.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "node/node_view.h"
#include "sched/lease_json.h"

namespace tarmac::top {

struct TopProcess {
  int64_t pid = 0;
  int64_t parent_pid = 0;
  int gpu = 0;      // The GPU's index.
  std::string mig;  // The MIG profile when on an instance ("1g.10gb").
  int64_t uid = -1;
  std::string user;
  std::string name;
  std::string command;  // Empty when not shown (or unknown).
  std::optional<double> gpu_memory_bytes;
  std::optional<double> sm_ratio;
  // From /proc, read by top itself (empty until two reads apart).
  std::optional<double> cpu_ratio;  // Of one core, since the last read.
  std::optional<int64_t> host_memory_bytes;
  std::optional<double> elapsed_seconds;
  int64_t start_ticks = 0;  // Its identity with the PID (signals).
  std::string holder;       // "lease 3", "pod ns/name", "slurm 812", or "".
  bool is_idle_holding = false;
};

struct TopData {
  node::NodeView status;  // The GPUs and host, as `tarmac status` reads them.
  std::vector<sched::LeaseShown> leases;
  std::vector<sched::PendingShown> queue;
  std::map<int, std::vector<double>> series;  // Utilization (0..1) by GPU index, oldest first.
  double series_step_seconds = 1;             // Between two of its values.
  std::vector<TopProcess> processes;
  bool is_agent = false;   // Read through the agent (else NVML directly).
  bool has_data = false;   // At least one read arrived.
  double age_seconds = 0;  // Since the data was read.
  bool is_stale = false;   // The last reads failed or are late.
  std::string stale_why;   // What the screen says when stale.
  std::string last_event;  // "12:01:07 preempted: …"
  double now_unix = 0;     // For lease time left.
  // The details overlay's process: its GPU variables from its environment
  // (read by top when the overlay opens; empty when unreadable).
  int64_t details_pid = 0;
  std::vector<std::string> details_env;
  std::string details_env_error;
};

enum class SortKey { kGpu, kPid, kUser, kGpuMemory, kSm, kCpu, kHostMemory, kElapsed, kName };

// Column header for `key` ("GMEM").
const char* SortKeyTitle(SortKey key);
// The next key, in column order (the `s` key).
SortKey NextSortKey(SortKey key);

enum class Overlay { kNone, kHelp, kDetails, kConfirm };

struct TopUi {
  SortKey sort = SortKey::kGpuMemory;
  bool is_descending = true;
  std::string filter;  // A part of name, command, user or PID, any case.
  bool is_editing_filter = false;
  bool is_tree = false;      // Children under their parents.
  int64_t selected_pid = 0;  // 0: the first row.
  int scroll = 0;            // First process row shown.
  Overlay overlay = Overlay::kNone;
  int confirm_signal = 0;  // SIGTERM or SIGKILL while Overlay::kConfirm.
  bool is_color = true;
  bool is_unicode = true;  // Block characters for the history graph.
  std::string message;     // The last action's outcome, in the footer.
};

// The processes of `status` (each GPU's and MIG instance's), with holder
// and idle-holding marks; /proc fields empty.
std::vector<TopProcess> ProcessesFromStatus(const node::NodeView& status);

// "lease 3 run", "slurm 812": who holds a GPU or MIG instance, for the
// process panel.
std::string HolderOf(const node::GpuLease& lease);

}  // namespace tarmac::top
