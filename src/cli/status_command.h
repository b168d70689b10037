// SPDX-License-Identifier: Apache-2.0
//
// `tarmac status [--json] [--watch [SECONDS]] [--color auto|always|never]`.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/options.h"

namespace tarmac::cli {

struct StatusOptions {
  bool json = false;
  double watch_seconds = 0;  // 0: print once.
  std::string color = "auto";
  bool wide = false;  // --wide: every line in full, whatever the width
};

CLI::App* AddStatusCommand(CLI::App* app, StatusOptions* options);
int RunStatus(const GlobalOptions& global, const StatusOptions& options, Clock* clock, Logger* logger);

// Opens the backend the global options name; shared by every read command.
Result<gpu::OpenedBackend> OpenFromOptions(const GlobalOptions& global, Clock* clock, Logger* logger);

}  // namespace tarmac::cli
