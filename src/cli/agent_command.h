// SPDX-License-Identifier: Apache-2.0
//
// `tarmac agent` (run the agent in the foreground) and
// `tarmac config check FILE` (validate a config without starting).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/options.h"
#include "config/agent_flags.h"

namespace tarmac::cli {

struct AgentCommandOptions {
  config::AgentFlags flags;
};

CLI::App* AddAgentCommand(CLI::App* app, AgentCommandOptions* options);
// Replaces this process with tarmacd (next to this binary) and the same
// flags; returns only on failure.
int RunAgentCommand(const AgentCommandOptions& options);

struct ConfigCheckOptions {
  std::string path;
};

// Returns the `config` command; its `check` subcommand is the one to test
// for parsed().
CLI::App* AddConfigCommand(CLI::App* app, ConfigCheckOptions* options, CLI::App** check);
int RunConfigCheck(const ConfigCheckOptions& options);

}  // namespace tarmac::cli
