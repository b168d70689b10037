// SPDX-License-Identifier: Apache-2.0
#include "cli/options.h"

#include <cstdio>

namespace tarmac::cli {

void AddGlobalOptions(CLI::App* app, GlobalOptions* options) {
  app->add_option("--backend", options->backend,
                  "Read the GPUs directly with this backend, not through the agent: auto (NVML when the "
                  "driver library loads), nvml, or sim")
      ->envname("TARMAC_BACKEND")
      ->default_str("auto")
      ->each([options](const std::string&) { options->is_backend_explicit = true; });
  app->add_option("--socket", options->socket, "The agent's socket (used when an agent serves it)")
      ->envname("TARMAC_SOCKET")
      ->default_str("/run/tarmac/tarmac.sock");
  app->add_flag("--no-agent", options->no_agent, "Read the GPUs directly even when an agent runs");
  app->add_option("--nvml-library", options->nvml_library,
                  "NVML library file to load (default: libnvidia-ml.so.1, then libnvidia-ml.so)")
      ->envname("TARMAC_NVML_LIBRARY");
  app->add_option("--scenario", options->scenario, "Scenario file for --backend sim (see docs/scenario.md)")
      ->envname("TARMAC_SIM_SCENARIO");
  app->add_option("--sim-dir", options->sim_dir,
                  "Directory of the simulated world (default /tmp/tarmac-sim-UID)")
      ->envname("TARMAC_SIM_DIR");
  app->add_option("--log-level", options->log_level, "debug, info, warning, error or off")
      ->envname("TARMAC_LOG_LEVEL")
      ->default_str("warning");
}

void AddSocketOption(CLI::App* cmd, GlobalOptions* options) {
  cmd->add_option("--socket", options->socket, "The agent's socket")
      ->envname("TARMAC_SOCKET")
      ->capture_default_str();
}

Result<gpu::BackendOptions> MakeBackendOptions(const GlobalOptions& options) {
  gpu::BackendOptions out;
  if (!gpu::ParseBackendKind(options.backend, &out.kind)) {
    return Status::InvalidArgument("--backend: expected auto, nvml or sim", options.backend);
  }
  LogLevel level;
  if (!ParseLogLevel(options.log_level, &level)) {
    return Status::InvalidArgument("--log-level: expected debug, info, warning, error or off",
                                   options.log_level);
  }
  out.nvml_library = options.nvml_library;
  out.sim.scenario_path = options.scenario;
  out.sim.dir = options.sim_dir;
  return out;
}

}  // namespace tarmac::cli
