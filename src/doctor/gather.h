// SPDX-License-Identifier: Apache-2.0
//
// Gathering the doctor's inputs that are not the GPUs' readings, shared by
// `tarmac doctor` and the agent's scheduled run: the host's side (memory,
// the kernel log's Xids and the uptime, the PCI bus, each GPU process's
// facts, the container runtime) and throttling from the history.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "doctor/host_files.h"
#include "doctor/inputs.h"
#include "store/sqlite_db.h"

namespace tarmac::doctor {

struct GatherOptions {
  bool wants_kernel_log = true;
  bool wants_containers = true;
};

// Fills in->memory, kernel_xids (or kernel_log_error), uptime_seconds,
// pci_gpus, processes (for the GPU processes of in->node_view) and containers.
void GatherHost(const HostFiles& host, const GatherOptions& options, DoctorInputs* in);

// What the doctor's inputs are made from, as `tarmac doctor` and the
// agent's scheduled run each have it.
struct InputSources {
  node::NodeView node_view;  // The GPUs as last read (lease marks joined).
  std::string gpu_error;     // Why they could not be read; else the view's backend error, if any.
  bool through_agent = false;
  store::Db* history = nullptr;  // The history database, when it could be opened.
  int64_t now_unix = 0;
  // /proc/stat at the start and end of the window CPU time is judged over.
  std::optional<std::string> stat_before;
  std::optional<std::string> stat_after;
  // /proc/<pid>/stat of the GPU processes, by PID, at the same two times
  // (ReadProcessStats): their CPU time over the window.
  std::map<int64_t, std::string> process_stats_before;
  std::map<int64_t, std::string> process_stats_after;
  GatherOptions gather;
};

// /proc/<pid>/stat of every process on the GPUs of `node_view`, by PID
// (those that could be read).
std::map<int64_t, std::string> ReadProcessStats(const HostFiles& host, const node::NodeView& node_view);

// Fills every input both callers have the same way: the GPUs and who is
// asking, throttling and MIG instances from the history, CPU time over the
// window, and the host's side (GatherHost). What only one caller measures
// (a few readings' throttling, storage and network throughput) it adds.
void FillInputs(const HostFiles& host, InputSources sources, DoctorInputs* in);

// Throttling per GPU index over the last hour, from the history's minute
// rollups ("the last hour"); empty when the history has none.
std::map<int, ThrottleWindow> ThrottleFromHistory(store::Db* db, int64_t now_unix);
// DoctorInputs::mig_empty_seconds from the history in `db`.
std::map<std::string, int64_t> MigEmptyFromHistory(store::Db* db, int64_t now_unix);

}  // namespace tarmac::doctor
