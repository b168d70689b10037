// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/sibling_program.h"
#include "config/config.h"

namespace tarmac::cli {

CLI::App* AddAgentCommand(CLI::App* app, AgentCommandOptions* options) {
  CLI::App* cmd = app->add_subcommand(
      "agent",
      "Run the agent in the foreground (tarmacd): sample every GPU and process, serve the local API "
      "(docs/protocol.md) and HTTP (docs/metrics.md). Flags override the config file");
  config::AddAgentFlags(cmd, &options->flags);
  return cmd;
}

int RunAgentCommand(const AgentCommandOptions& options) {
  // The agent is its own program (tarmacd, next to tarmac), so that this
  // one stays small for the read commands; exec keeps the PID, the
  // environment and the systemd notify socket.
  return ExecSibling("tarmacd", config::AgentArgv(options.flags));
}

CLI::App* AddConfigCommand(CLI::App* app, ConfigCheckOptions* options, CLI::App** check) {
  CLI::App* cmd = app->add_subcommand("config", "Work with the agent's configuration");
  cmd->require_subcommand(1);
  *check = cmd->add_subcommand("check", "Validate a config file; report every problem with its line");
  (*check)->add_option("file", options->path, "The config file")->required();
  return cmd;
}

int RunConfigCheck(const ConfigCheckOptions& options) {
  Result<config::Config> c = config::LoadConfig(options.path, true);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().message().c_str());
    return kExitUsage;
  }
  std::printf("%s: ok\n", options.path.c_str());
  return kExitOk;
}

}  // namespace tarmac::cli
