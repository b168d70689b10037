// SPDX-License-Identifier: Apache-2.0
//
// Reads scenario files (TOML; the format is in docs/scenario.md). Every
// problem is reported as one kInvalidArgument Status of the form
// "FILE:LINE: key 'KEY': what is wrong", and nothing is partly applied.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "sim/scenario.h"

namespace tarmac::sim {

// Parses scenario text. `source_name` is used in messages (a path, or
// "<string>").
Result<Scenario> ParseScenario(std::string_view text, std::string_view source_name);

// Reads and parses the file at `path`. kNotFound/kIOError when it cannot be
// read.
Result<Scenario> LoadScenario(const std::string& path);

}  // namespace tarmac::sim
