// SPDX-License-Identifier: Apache-2.0
//
// The exit code for what the agent said about a lease command (the calls
// themselves are client::AgentClient's). Shared by run, reserve, shell,
// extend, release, leases, queue and zombies --kill.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/options.h"
#include "common/result.h"

namespace tarmac::cli {

// Prints "tarmac: <what>: <message>" and returns the exit code for a lease
// command's failure (options.h: 69, 74, 75, 77, 2 or 1).
int LeaseExit(const std::string& what, const Status& status);

}  // namespace tarmac::cli
