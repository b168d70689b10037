// SPDX-License-Identifier: Apache-2.0
//
// `tarmac doctor`: the fast-diagnosis playbook in one command. Gathers the
// GPUs' readings (from the agent, else NVML directly), throttling over the
// last hour of history (else over a short window it samples itself), the
// kernel log's Xid lines, the PCI bus, CPU and memory over the window, the
// GPU processes' allowed CPUs and CUDA_VISIBLE_DEVICES, and the container
// runtime; with --storage and --network (not --quick) measures read and
// network throughput; runs the checks of src/doctor; prints a verdict per
// question.
// Exit code by the worst finding: 0 none above info, 4 warning, 5 critical
// (1 error, 2 usage). docs/doctor.md.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/options.h"
#include "cli/store_access.h"
#include "common/clock.h"
#include "common/log.h"

namespace tarmac::cli {

struct DoctorOptions {
  bool json = false;
  bool quick = false;
  std::vector<std::string> only;
  std::vector<std::string> skip;
  double window_seconds = 0;    // 0: 0.5 with --quick, else 2.
  std::string host_root = "/";  // --host-root: where /proc, /sys, /dev/kmsg and /etc are.
  std::string color = "auto";
  std::string storage;  // --storage PATH: measure reads there.
  std::string storage_size = "256MiB";
  double storage_expect_mb_per_s = 500;
  std::string network;  // --network HOST[:PORT]: an iperf3 server.
  double network_expect_gbit_per_s = 10;
  int network_seconds = 3;
  StoreAccessOptions store;
};

CLI::App* AddDoctorCommand(CLI::App* app, DoctorOptions* options, GlobalOptions* global);
int RunDoctor(const GlobalOptions& global, const DoctorOptions& options, Clock* clock, Logger* logger);

}  // namespace tarmac::cli
