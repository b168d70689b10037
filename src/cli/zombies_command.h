// SPDX-License-Identifier: Apache-2.0
//
// `tarmac zombies [--json] [--kill [--pid PID]]`: processes holding GPU memory without computing,
// with the evidence (how much, how long at 0 % SM, whose, parent alive or
// not, lease or none), as the agent has watched them over time
// ([zombies] in the config). --kill asks the agent to terminate them: it
// re-verifies each PID's start time and owner first, signals only your own
// processes (all, for root and the admin group), and logs each as an event.
// Needs the agent; exit 1 when it is not there.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "sched/zombies_json.h"

namespace tarmac::cli {

struct ZombiesOptions {
  bool json = false;
  bool kill = false;  // --kill: SIGTERM (then SIGKILL) to the zombies you may terminate.
  int64_t pid = 0;    // --pid: only this one.
};

// Adds the command, with --socket bound to `global`.
CLI::App* AddZombiesCommand(CLI::App* app, ZombiesOptions* options, GlobalOptions* global);
int RunZombies(const GlobalOptions& global, const ZombiesOptions& options);

// The table `tarmac zombies` prints for the agent's answer. Pure.
std::string RenderZombies(const sched::ZombieReport& report);

}  // namespace tarmac::cli
