// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "config/config.h"

namespace tarmac::cli {

CLI::App* AddAgentCommand(CLI::App* app, AgentCommandOptions* options) {
  CLI::App* cmd = app->add_subcommand(
      "agent", "Run the agent in the foreground (tarmacd): sample every GPU and process, serve the local API "
               "(docs/protocol.md) and HTTP (docs/metrics.md). Flags override the config file");
  config::AddAgentFlags(cmd, &options->flags);
  return cmd;
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
  std::vector<std::string> argv = config::AgentArgv(options.flags);
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
