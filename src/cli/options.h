// SPDX-License-Identifier: Apache-2.0
//
// Options every command shares (which backend, where its library or scenario
// is, how much to log), the exit-code table, and the one place that turns a
// Status into a message and an exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/exit_codes.h"
#include "common/log.h"
#include "common/result.h"
#include "gpu/backend_factory.h"

namespace tarmac::cli {

// Exit codes (common/exit_codes.h), documented in `tarmac --help`.
using tarmac::ExitWith;
using tarmac::kAgentHint;
using tarmac::kExitError;
using tarmac::kExitNoAgent;
using tarmac::kExitNoDriver;
using tarmac::kExitNoFit;
using tarmac::kExitNotPermitted;
using tarmac::kExitOk;
using tarmac::kExitStorage;
using tarmac::kExitUsage;

inline constexpr const char* kExitCodesHelp =
    "Exit codes: 0 ok; 1 error (or, for pick, no GPU fits); 2 usage error; "
    "3 no GPU library or driver; 69 no agent to ask, or it did not answer in time; 74 the agent could not "
    "save the change, so made none; 75 no GPUs fit now "
    "(run/reserve --no-wait); 77 not permitted (another user's lease or process). "
    "tarmac run exits with its command's status (128+N when killed by signal N; 124 when its --max-time "
    "ran out, as timeout(1)).";

struct GlobalOptions {
  std::string backend = "auto";  // auto | nvml | sim
  std::string nvml_library;      // --nvml-library
  std::string scenario;          // --scenario (sim backend)
  std::string sim_dir;           // --sim-dir (sim backend)
  std::string log_level = "warning";
  std::string socket = "/run/tarmac/tarmac.sock";  // --socket, TARMAC_SOCKET
  bool no_agent = false;                           // --no-agent
  bool is_backend_explicit = false;                // --backend or TARMAC_BACKEND was given.
};

// Adds --backend, --nvml-library, --scenario, --sim-dir, --socket,
// --no-agent and --log-level to `app`.
void AddGlobalOptions(CLI::App* app, GlobalOptions* options);

// Adds only --socket (TARMAC_SOCKET) to `cmd`: for commands that need the
// agent (zombies, run, shell and the lease commands).
void AddSocketOption(CLI::App* cmd, GlobalOptions* options);

// Validates the options and builds backend options. kInvalidArgument for an
// unknown backend or log level.
Result<gpu::BackendOptions> MakeBackendOptions(const GlobalOptions& options);

}  // namespace tarmac::cli
