// SPDX-License-Identifier: Apache-2.0
//
// `tarmac agent` (run the agent in the foreground) and
// `tarmac config check FILE` (validate a config without starting).
#pragma once

#include <CLI/CLI.hpp>

#include "agent/agent.h"
#include "cli/options.h"

namespace tarmac::cli {

struct AgentCommandOptions {
  agent::AgentFlags flags;
};

CLI::App* AddAgentCommand(CLI::App* app, AgentCommandOptions* options);
int RunAgentCommand(const AgentCommandOptions& options, Clock* clock, Logger* logger);

struct ConfigCheckOptions {
  std::string path;
};

// Returns the `config` command; its `check` subcommand is the one to test
// for parsed().
CLI::App* AddConfigCommand(CLI::App* app, ConfigCheckOptions* options, CLI::App** check);
int RunConfigCheck(const ConfigCheckOptions& options);

}  // namespace tarmac::cli
