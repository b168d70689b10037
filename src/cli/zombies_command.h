// SPDX-License-Identifier: Apache-2.0
//
// `tarmac zombies [--json]`: processes holding GPU memory without computing,
// with the evidence (how much, how long at 0 % SM, whose, parent alive or
// not, lease or none), as the agent has watched them over time
// ([zombies] in the config). Needs the agent; exit 1 when it is not there.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/options.h"

namespace tarmac::cli {

struct ZombiesOptions {
  bool json = false;
};

// Adds the command, with --socket bound to `global`.
CLI::App* AddZombiesCommand(CLI::App* app, ZombiesOptions* options, GlobalOptions* global);
int RunZombies(const GlobalOptions& global, const ZombiesOptions& options);

// The table `tarmac zombies` prints for the agent's answer. Pure.
std::string RenderZombies(const nlohmann::json& answer);

}  // namespace tarmac::cli
