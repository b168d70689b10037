// SPDX-License-Identifier: Apache-2.0
//
// Points in time as users write them on the command line (--since,
// --until): a duration ago ("6h", "7d", "90m"), "now", a date
// ("2026-11-29", midnight UTC), a date and time ("2026-11-29T14:00",
// "2026-11-29 14:00:00", optional "Z"; UTC), or Unix seconds ("@1795000000").
// Pure; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tarmac {

// Unix seconds for `text` relative to `now_unix`. kInvalidArgument with the
// accepted forms for anything else.
Result<int64_t> ParseTimeSpec(std::string_view text, int64_t now_unix);

// `unix_seconds` as people read it in tarmac's reports: "2026-12-01 14:05
// UTC" ("2026-12-01 14:05:09 UTC" with seconds).
std::string FormatUtc(int64_t unix_seconds, bool with_seconds = false);

// `t` in RFC 3339, UTC, to the millisecond: "2026-11-29T14:00:05.250Z".
std::string FormatRfc3339(std::chrono::system_clock::time_point t);

}  // namespace tarmac
