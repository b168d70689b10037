// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_command.h"

#include <cstdio>

#include "config/config.h"

namespace tarmac::cli {

CLI::App* AddAgentCommand(CLI::App* app, AgentCommandOptions* options) {
  CLI::App* cmd = app->add_subcommand(
      "agent", "Run the agent in the foreground: sample every GPU and process, serve the local API "
               "(docs/protocol.md). Flags override the config file");
  agent::AgentFlags& f = options->flags;
  cmd->add_option("--config", f.config_path, "Config file (default /etc/tarmac/tarmac.toml, optional)");
  cmd->add_option("--backend", f.backend, "auto, nvml or sim");
  cmd->add_option("--scenario", f.scenario, "Scenario for --backend sim")->envname("TARMAC_SIM_SCENARIO");
  cmd->add_option("--sim-dir", f.sim_dir, "Simulated world directory")->envname("TARMAC_SIM_DIR");
  cmd->add_option("--nvml-library", f.nvml_library, "NVML library file")->envname("TARMAC_NVML_LIBRARY");
  cmd->add_option("--socket", f.socket_path, "Unix socket to serve (default /run/tarmac/tarmac.sock)")
      ->envname("TARMAC_SOCKET");
  cmd->add_option("--state-dir", f.state_dir, "State directory (default /var/lib/tarmac)");
  cmd->add_option("--log-level", f.log_level, "debug, info, warning or error (default: the config's)")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  return cmd;
}

int RunAgentCommand(const AgentCommandOptions& options, Clock* clock, Logger* logger) {
  logger->set_level(LogLevel::kInfo);
  Status s = agent::RunAgent(options.flags, clock, logger);
  if (!s.ok()) return ExitWith(s.WithContext("agent"));
  return kExitOk;
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
