// SPDX-License-Identifier: Apache-2.0
//
// A check run on TOML text before toml++ parses it. TOML allows non-ASCII
// characters only inside strings and comments; toml++ 3.3 (Debian 12)
// reaches undefined behaviour on some of them elsewhere (a code point such
// as U+040D where it looks for whitespace: its unicode table has holes).
// This rejects such text first, with the line, so a typo in a config or
// scenario file is a clear error and never a crash. Pure.
#pragma once

#include <string_view>

#include "common/status.h"

namespace tarmac {

// kInvalidArgument "SOURCE:LINE: non-ASCII character outside a string or
// comment" (or "right after a line-ending backslash", where toml++ also
// tests for whitespace) for the first such byte; OK otherwise. Strings and comments are
// found as TOML defines them (basic, literal and multi-line strings, with
// escapes in basic ones).
Status CheckTomlText(std::string_view text, std::string_view source);

}  // namespace tarmac
