// SPDX-License-Identifier: Apache-2.0
//
// The agent's command-line flags, declared once: the table below gives each
// flag its name, help, environment variable, where it is kept and which
// config value it overrides. `tarmacd` and `tarmac agent` take them from it
// (AddAgentFlags), `tarmac agent` passes them on to tarmacd from it
// (AgentArgv), and the agent applies them over the config file from it
// (ApplyAgentFlags). Flags override the config; an empty flag leaves it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "config/config.h"

namespace tarmac::config {

struct AgentFlags {
  std::string config_path;  // Empty: the default path (optional file).
  std::string backend;
  std::string scenario;
  std::string sim_dir;
  std::string nvml_library;
  std::string socket_path;
  std::string state_dir;
  std::string log_level;
  std::string http_listen;  // HOST:PORT, or "off".
};

struct AgentFlag {
  const char* name;  // "--socket"
  const char* help;
  const char* env;  // Read when the flag is absent; null: none.
  std::string AgentFlags::*value;
  // Sets the config value the flag overrides; null: not a config value
  // (--config).
  void (*overrides)(const std::string& value, Config* config);
  std::vector<std::string> choices = {};  // The values allowed; empty: any.
};

const std::vector<AgentFlag>& AgentFlagTable();

// Adds every flag to `cmd`, kept in `flags`.
void AddAgentFlags(CLI::App* cmd, AgentFlags* flags);
// "tarmacd" and the flags that are set, as argv.
std::vector<std::string> AgentArgv(const AgentFlags& flags);
// Sets each config value whose flag is set.
void ApplyAgentFlags(const AgentFlags& flags, Config* config);

}  // namespace tarmac::config
