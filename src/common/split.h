// SPDX-License-Identifier: Apache-2.0
//
// Comma-separated lists as users and environments write them
// ("0,1", "GPU-a, GPU-b", "ecc,,xid"). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tarmac {

// The items of `text` split at commas, each trimmed of spaces; empty items
// are left out.
std::vector<std::string> SplitCommas(std::string_view text);

}  // namespace tarmac
