// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "config/config.h"

namespace tarmac::cli {

void AddAgentFlags(CLI::App* cmd, agent::AgentFlags* flags) {
  agent::AgentFlags& f = *flags;
  cmd->add_option("--config", f.config_path, "Config file (default /etc/tarmac/tarmac.toml, optional)");
  cmd->add_option("--backend", f.backend, "auto, nvml or sim");
  cmd->add_option("--scenario", f.scenario, "Scenario for --backend sim")->envname("TARMAC_SIM_SCENARIO");
  cmd->add_option("--sim-dir", f.sim_dir, "Simulated world directory")->envname("TARMAC_SIM_DIR");
  cmd->add_option("--nvml-library", f.nvml_library, "NVML library file")->envname("TARMAC_NVML_LIBRARY");
  cmd->add_option("--socket", f.socket_path, "Unix socket to serve (default /run/tarmac/tarmac.sock)")
      ->envname("TARMAC_SOCKET");
  cmd->add_option("--state-dir", f.state_dir, "State directory (default /var/lib/tarmac)");
  cmd->add_option("--http-listen", f.http_listen,
                  "HTTP address for /metrics, /health, /api/v1/status (default 127.0.0.1:9477; port 0 picks a "
                  "free one; off: no HTTP)");
  cmd->add_option("--log-level", f.log_level, "debug, info, warning or error (default: the config's)")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
}

CLI::App* AddAgentCommand(CLI::App* app, AgentCommandOptions* options) {
  CLI::App* cmd = app->add_subcommand(
      "agent", "Run the agent in the foreground (tarmacd): sample every GPU and process, serve the local API "
               "(docs/protocol.md) and HTTP (docs/metrics.md). Flags override the config file");
  AddAgentFlags(cmd, &options->flags);
  return cmd;
}

std::vector<std::string> AgentArgv(const agent::AgentFlags& f) {
  std::vector<std::string> argv = {"tarmacd"};
  auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    argv.push_back(flag);
    argv.push_back(value);
  };
  add("--config", f.config_path);
  add("--backend", f.backend);
  add("--scenario", f.scenario);
  add("--sim-dir", f.sim_dir);
  add("--nvml-library", f.nvml_library);
  add("--socket", f.socket_path);
  add("--state-dir", f.state_dir);
  add("--http-listen", f.http_listen);
  add("--log-level", f.log_level);
  return argv;
}

int RunAgentCommand(const AgentCommandOptions& options) {
  // The agent is its own program (tarmacd, next to tarmac), so that this
  // one stays small for the read commands; exec keeps the PID, the
  // environment and the systemd notify socket.
  char self[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/'));
  std::string path = dir + "/tarmacd";
  std::vector<std::string> argv = AgentArgv(options.flags);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  return ExitWith(Status::NotFound(fmt::format("agent: cannot run {}: {}", path, std::strerror(errno)),
                                   "tarmacd is installed next to tarmac"));
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
