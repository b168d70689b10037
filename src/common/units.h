// SPDX-License-Identifier: Apache-2.0
//
// Parsing and formatting of the quantities users type and read: memory sizes
// ("20GiB", "512MiB", "1.5G"), durations ("30s", "10m", "2h", "1d") and
// percentages. Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tarmac {

// Parses a byte count. Accepts a plain integer (bytes) or a number with a
// unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB, K, M, G, T
// (K/M/G/T alone are read as binary units, as nvidia-smi prints them).
// Returns kInvalidArgument naming the text for anything else, for negative
// values and for values that overflow int64.
Result<int64_t> ParseBytes(std::string_view text);

// Parses a duration: a number with a unit ms, s, m, h, d, w (7 days) or y
// (365 days); a plain number is seconds. Returns kInvalidArgument for anything else.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The same, for a command line: a plain number is refused with a hint
// ("90: give a unit: 90m, 90s"), since tools read it differently (Slurm as
// minutes, timeout(1) as seconds).
Result<std::chrono::milliseconds> ParseDurationWithUnit(std::string_view text);

// "80.0 GiB", "512 MiB", "0 B": binary units, one decimal above MiB.
std::string FormatBytes(int64_t bytes);

// A span of GPU time in hours: "12.5h", under an hour in minutes ("35m",
// "<1m"), "0" for none.
std::string FormatHours(double hours);

// A count with its noun: "1 lease", "3 leases", "0 leases" (the plural is
// the noun with "s", unless given).
std::string Counted(int64_t n, std::string_view noun, std::string_view plural = "");

// "1h 05m", "12m 30s", "45s".
std::string FormatDuration(std::chrono::seconds duration);
// The same, with a span under a second (or not whole) in milliseconds:
// "250ms", "1.5s"; whole seconds as above.
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace tarmac
