// SPDX-License-Identifier: Apache-2.0
#include "config/agent_flags.h"

namespace tarmac::config {

const std::vector<AgentFlag>& AgentFlagTable() {
  static const std::vector<AgentFlag> kFlags = {
      {"--config", "Config file (default /etc/tarmac/tarmac.toml, optional)", nullptr,
       &AgentFlags::config_path, nullptr},
      {"--backend",
       "auto, nvml or sim",
       nullptr,
       &AgentFlags::backend,
       [](const std::string& v, Config* c) { gpu::ParseBackendKind(v, &c->gpu.kind); },
       {"auto", "nvml", "sim"}},
      {"--scenario", "Scenario for --backend sim", "TARMAC_SIM_SCENARIO", &AgentFlags::scenario,
       [](const std::string& v, Config* c) { c->gpu.sim.scenario_path = v; }},
      {"--sim-dir", "Simulated world directory", "TARMAC_SIM_DIR", &AgentFlags::sim_dir,
       [](const std::string& v, Config* c) { c->gpu.sim.dir = v; }},
      {"--nvml-library", "NVML library file", "TARMAC_NVML_LIBRARY", &AgentFlags::nvml_library,
       [](const std::string& v, Config* c) { c->gpu.nvml_library = v; }},
      {"--socket", "Unix socket to serve (default /run/tarmac/tarmac.sock)", "TARMAC_SOCKET",
       &AgentFlags::socket_path, [](const std::string& v, Config* c) { c->agent.socket_path = v; }},
      {"--state-dir",
       "State directory (default /var/lib/tarmac; a normal user's: $XDG_STATE_HOME/tarmac or "
       "~/.local/state/tarmac)",
       nullptr, &AgentFlags::state_dir, [](const std::string& v, Config* c) { c->agent.state_dir = v; }},
      {"--http-listen",
       "HTTP address for /metrics, /health, the web console and /api/v1/ (default 127.0.0.1:9477; port 0 "
       "picks a "
       "free one; "
       "off: no HTTP)",
       nullptr, &AgentFlags::http_listen, [](const std::string& v, Config* c) { c->http.listen = v; }},
      {"--log-level",
       "debug, info, warning or error (default: the config's)",
       nullptr,
       &AgentFlags::log_level,
       [](const std::string& v, Config* c) { c->agent.log_level = v; },
       {"debug", "info", "warning", "error"}},
  };
  return kFlags;
}

void AddAgentFlags(CLI::App* cmd, AgentFlags* flags) {
  for (const AgentFlag& f : AgentFlagTable()) {
    CLI::Option* option = cmd->add_option(f.name, flags->*f.value, f.help);
    if (f.env != nullptr) option->envname(f.env);
    if (!f.choices.empty()) option->check(CLI::IsMember(f.choices));
  }
}

std::vector<std::string> AgentArgv(const AgentFlags& flags) {
  std::vector<std::string> argv = {"tarmacd"};
  for (const AgentFlag& f : AgentFlagTable()) {
    const std::string& value = flags.*f.value;
    if (value.empty()) continue;
    argv.push_back(f.name);
    argv.push_back(value);
  }
  return argv;
}

void ApplyAgentFlags(const AgentFlags& flags, Config* config) {
  for (const AgentFlag& f : AgentFlagTable()) {
    const std::string& value = flags.*f.value;
    if (f.overrides != nullptr && !value.empty()) f.overrides(value, config);
  }
}

}  // namespace tarmac::config
