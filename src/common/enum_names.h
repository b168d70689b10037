// SPDX-License-Identifier: Apache-2.0
//
// An enum's names in one table of rows, read both ways: the name of a value
// and the value of a name come from the same rows, so they cannot disagree.
//
//   constexpr std::pair<Color, const char*> kColorNames[] = {{Color::kRed, "red"}, {Color::kBlue, "blue"}};
//   const char* ColorName(Color c) { return EnumName(kColorNames, c); }
//   bool ParseColor(std::string_view s, Color* c) { return ParseEnum(kColorNames, s, c); }
//
// A value missing from the table is named by the first row (the default).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

namespace tarmac {

template <typename E, size_t N>
constexpr const char* EnumName(const std::pair<E, const char*> (&rows)[N], E value) {
  for (const auto& [v, name] : rows) {
    if (v == value) return name;
  }
  return rows[0].second;
}

// Sets *out and returns true when `text` is a name in the table.
template <typename E, size_t N>
constexpr bool ParseEnum(const std::pair<E, const char*> (&rows)[N], std::string_view text, E* out) {
  for (const auto& [v, name] : rows) {
    if (text == name) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace tarmac
