// SPDX-License-Identifier: Apache-2.0
//
// Everything the doctor's checks judge, gathered before any check runs (by
// the `tarmac doctor` command, from the agent or the GPUs, the history and
// the host's files), so that every check is a pure function of it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/host_readings.h"
#include "doctor/throughput.h"
#include "node/node_view.h"
#include "node/utilization_series.h"

namespace tarmac::doctor {

// Clock throttling of one GPU over the judged window.
struct ThrottleWindow {
  double seconds = 0;           // Time judged.
  double thermal_seconds = 0;   // SW or HW thermal slowdown.
  double power_seconds = 0;     // At its power limit (SW power cap) or HW power brake.
  double hardware_seconds = 0;  // HW slowdown (an external signal: power supply, board overheating).
  std::string source;           // "the last hour of history", "5 readings over 1.0 s".
};

struct DoctorInputs {
  std::string hostname;
  node::NodeView node_view;  // The latest reading of the GPUs.
  std::string gpu_error;     // Why the GPUs could not be read; "" when they were.
  bool through_agent = false;
  bool is_root = false;
  std::map<int, ThrottleWindow> throttle;  // By GPU index.
  // The agent's recent utilization readings, by GPU index (through the
  // agent only): what bursts of work are judged by.
  std::map<int, node::UtilizationSeries> utilization_series;
  // By MIG UUID: how long no process has run in the instance, from history
  // (since it was first seen when none ever did); absent without history.
  std::map<std::string, int64_t> mig_empty_seconds;
  std::vector<KernelXid> kernel_xids;
  std::optional<double> uptime_seconds;         // /proc/uptime: how old each kernel log line is.
  std::string kernel_log_error;                 // Why the kernel log was not read; "" when it was.
  std::optional<std::vector<PciGpu>> pci_gpus;  // Empty: /sys was not read.
  std::optional<CpuWindow> cpu;
  std::optional<MemInfo> memory;
  std::map<int64_t, ProcessFacts> processes;  // The GPU processes, by PID.
  std::optional<ContainerFacts> containers;
  // Measurements, when asked for: what was measured, or why it could not
  // be; and what the pipeline needs (below it: a warning).
  std::optional<StorageResult> storage;
  std::string storage_error;
  double storage_expect_mb_per_s = 500;
  std::optional<NetworkResult> network;
  std::string network_error;
  bool is_network_unreachable = false;  // The server did not answer (network_error says how).
  double network_expect_gbit_per_s = 10;
};

}  // namespace tarmac::doctor
