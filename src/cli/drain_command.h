// SPDX-License-Identifier: Apache-2.0
//
// `tarmac drain GPU --reason TEXT` and `tarmac undrain GPU`: an
// administrator takes a GPU out of allocation by hand and puts it back
// (leases/gpu_drains.h). GPU is an index or a UUID. The drain is kept by the
// agent across restarts, shown in status, top, /metrics and fleet status,
// and logged as an event with who and why; a lease already on the GPU
// keeps it. Root or the admin group only; needs the agent.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/options.h"

namespace tarmac::cli {

struct DrainOptions {
  std::string gpu;
  std::string reason;
  bool json = false;
};

// Adds `drain` and `undrain`, with --socket bound to `global`.
void AddDrainCommands(CLI::App* app, DrainOptions* options, GlobalOptions* global, CLI::App** drain,
                      CLI::App** undrain);
int RunDrain(const GlobalOptions& global, const DrainOptions& options, bool is_undrain);

}  // namespace tarmac::cli
