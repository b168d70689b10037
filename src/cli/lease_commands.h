// SPDX-License-Identifier: Apache-2.0
//
// The lease commands besides run and shell, all answered by the agent:
//   tarmac reserve --gpus N --for 2h    a reservation for interactive work
//   tarmac extend LEASE --by 1h         move a lease's end
//   tarmac release [LEASE]              give GPUs back (or cancel a request)
//   tarmac leases [--json]              who holds which GPUs, until when, idle how long
//   tarmac queue [--json]               queued requests, position and why they wait
//   tarmac events [--json]              the lease event log
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/options.h"
#include "cli/run_command.h"
#include "common/clock.h"
#include "sched/lease_json.h"

namespace tarmac::cli {

struct ReserveOptions {
  LeaseAsk ask;
};
struct ExtendOptions {
  std::string lease;
  std::string by;
  bool json = false;
};
struct ReleaseOptions {
  std::string lease;
};
struct ListOptions {
  bool json = false;
  int64_t after = 0;   // events: after this seq
  int64_t limit = 50;  // events: at most this many (newest)
  std::string kinds;   // events --kind: comma-separated event kinds
  std::string since;   // events --since: a duration ago, a date, or @UNIX
};

struct LeaseCommands {
  CLI::App* reserve = nullptr;
  CLI::App* extend = nullptr;
  CLI::App* release = nullptr;
  CLI::App* leases = nullptr;
  CLI::App* queue = nullptr;
  CLI::App* events = nullptr;
  ReserveOptions reserve_options;
  ExtendOptions extend_options;
  ReleaseOptions release_options;
  ListOptions leases_options;
  ListOptions queue_options;
  ListOptions events_options;
};

void AddLeaseCommands(CLI::App* app, LeaseCommands* commands, GlobalOptions* global);
// Runs whichever was parsed; -1 when none was (or none was added).
int RunLeaseCommands(const GlobalOptions& global, const LeaseCommands& commands, Clock* clock);

// The tables `tarmac leases` and `tarmac queue` print. Pure but for the
// current time, passed in.
std::string RenderLeases(const std::vector<sched::LeaseShown>& leases, double now_unix);
std::string RenderQueue(const std::vector<sched::PendingShown>& queue);

}  // namespace tarmac::cli
