// SPDX-License-Identifier: Apache-2.0
//
// `tarmac run [--gpus N | --gpu UUID,...] ... -- CMD ARGS...`: asks the agent
// for GPUs, waits in its queue when none fit (showing position and why;
// --no-wait exits 75 at once), then runs CMD as the calling user with
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES set to the GPUs' UUIDs
// and TARMAC_LEASE_ID to the lease. CMD runs in its own process group;
// signals to tarmac run are forwarded to it. tarmac run is the subreaper of
// everything CMD starts, so the lease ends only when CMD and all its
// descendants have exited; it exits with CMD's status (128+N for signal N).
// If tarmac run itself dies, the agent terminates CMD and ends the lease.
//
// `tarmac shell [--lease ID]`: a shell (or `-- CMD`) inside a reservation,
// run as a child so that the agent's idle warnings reach its terminal.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/options.h"
#include "client/agent_client.h"
#include "client/lease_request.h"
#include "common/clock.h"
#include "common/result.h"
#include "sched/lease_json.h"

namespace tarmac::cli {

using client::LeaseAsk;

struct RunOptions {
  LeaseAsk ask;
  std::vector<std::string> command;
};

struct ShellOptions {
  std::string lease;
  std::vector<std::string> command;
};

// Adds --gpus, --gpu, --min-free-memory, --idle-timeout, --priority,
// --queue/--no-wait to `cmd` (--max-time or --for is the caller's).
void AddLeaseAskOptions(CLI::App* cmd, LeaseAsk* ask);

// How long --no-wait waits for an agent that does not answer (then exit 69).
inline constexpr std::chrono::milliseconds kNoWaitPatience{5000};

// Asks for a lease and waits for it (the live queue line on a terminal; a
// line per change of position and one at the grant elsewhere). The granted
// lease, or the exit code to leave with.
struct Granted {
  sched::LeaseShown lease;
  int exit_code = 0;  // Non-zero: not granted.
};
Granted AskAndWait(const client::AgentClient& agent, const nlohmann::json& params, const char* what);

CLI::App* AddRunCommand(CLI::App* app, RunOptions* options, GlobalOptions* global);
int RunRun(const GlobalOptions& global, const RunOptions& options);

CLI::App* AddShellCommand(CLI::App* app, ShellOptions* options, GlobalOptions* global);
int RunShell(const GlobalOptions& global, const ShellOptions& options, Clock* clock);

}  // namespace tarmac::cli
