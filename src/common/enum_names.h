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
// Option checks and help take their lists from the same rows (EnumNames,
// EnumNameList), so a value added to the table is offered everywhere.
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Every name, in the table's order: for CLI::IsMember and the like.
template <typename E, size_t N>
std::vector<std::string> EnumNames(const std::pair<E, const char*> (&rows)[N]) {
  std::vector<std::string> names;
  for (const auto& row : rows) names.emplace_back(row.second);
  return names;
}

// "a, b or c", for messages and help.
template <typename E, size_t N>
std::string EnumNameList(const std::pair<E, const char*> (&rows)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i)
    out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + rows[i].second;
  return out;
}

}  // namespace tarmac
