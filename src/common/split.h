// SPDX-License-Identifier: Apache-2.0
//
// Comma-separated lists as users and environments write them
// ("0,1", "GPU-a, GPU-b", "ecc,,xid"), and lists split at one character
// (a /proc/PID/environ's NULs, GLIBC_TUNABLES' colons). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tarmac {

// What SplitCommas does with an empty item ("a,,b", "a,").
enum class Empties {
  kDrop,  // Left out: lists users write loosely.
  kKeep,  // Kept as "": formats where an empty item is an error to report.
};

// The items of `text` split at commas, each trimmed of spaces. With kKeep
// an empty `text` is one empty item.
std::vector<std::string> SplitCommas(std::string_view text, Empties empties = Empties::kDrop);

// The non-empty items of `text` between `separator`s, untrimmed, as views
// into `text`.
std::vector<std::string_view> SplitAt(std::string_view text, char separator);

}  // namespace tarmac
