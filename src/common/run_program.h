// SPDX-License-Identifier: Apache-2.0
//
// Running one of the host's programs (the doctor's iperf3 and journalctl,
// the agent's scontrol and scancel): argv as given (no shell), its standard
// output captured, its standard error discarded, killed when it outlives a
// timeout.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace tarmac {

// (standard output, at most 4 MiB; exit status, 128 + signal when killed).
// kNotFound when the program is not installed.
Result<std::pair<std::string, int>> RunProgram(const std::vector<std::string>& argv,
                                               std::chrono::seconds timeout);

}  // namespace tarmac
