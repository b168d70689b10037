// SPDX-License-Identifier: Apache-2.0
#include "common/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace tarmac {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

// Splits "20GiB" into 20.0 and "GiB". Returns false when no number leads.
bool SplitNumber(std::string_view text, double* number, std::string_view* unit) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, *number);
  if (ec != std::errc() || ptr == begin) return false;
  *unit = std::string_view(ptr, static_cast<size_t>(end - ptr));
  while (!unit->empty() && unit->front() == ' ') unit->remove_prefix(1);
  return std::isfinite(*number);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] + 32) : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] + 32) : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

Result<int64_t> ParseBytes(std::string_view text) {
  static constexpr std::array<Unit, 14> kUnits = {{
      {"", 1.0},
      {"b", 1.0},
      {"kib", 1024.0},
      {"mib", 1024.0 * 1024},
      {"gib", 1024.0 * 1024 * 1024},
      {"tib", 1024.0 * 1024 * 1024 * 1024},
      {"kb", 1e3},
      {"mb", 1e6},
      {"gb", 1e9},
      {"tb", 1e12},
      {"k", 1024.0},
      {"m", 1024.0 * 1024},
      {"g", 1024.0 * 1024 * 1024},
      {"t", 1024.0 * 1024 * 1024 * 1024},
  }};
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) {
    return Status::InvalidArgument("not a size", fmt::format("'{}' (try 20GiB)", text));
  }
  for (const Unit& u : kUnits) {
    if (!EqualsIgnoreCase(unit, u.name)) continue;
    double bytes = number * u.factor;
    if (bytes < 0) {
      return Status::InvalidArgument("negative size", fmt::format("'{}'", text));
    }
    if (bytes >= 9.2e18) {
      return Status::InvalidArgument("size too large", fmt::format("'{}'", text));
    }
    return static_cast<int64_t>(std::llround(bytes));
  }
  return Status::InvalidArgument("unknown size unit",
                                 fmt::format("'{}' (use B, KiB, MiB, GiB or TiB)", text));
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  static constexpr std::array<Unit, 8> kUnits = {{
      {"", 1000.0},
      {"ms", 1.0},
      {"s", 1000.0},
      {"m", 60.0 * 1000},
      {"h", 3600.0 * 1000},
      {"d", 86400.0 * 1000},
      {"w", 7 * 86400.0 * 1000},
      {"y", 365 * 86400.0 * 1000},
  }};
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) {
    return Status::InvalidArgument("not a duration", fmt::format("'{}' (try 30s, 10m, 2h)", text));
  }
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    double ms = number * u.factor;
    if (ms < 0) return Status::InvalidArgument("negative duration", fmt::format("'{}'", text));
    if (ms > 1e15) return Status::InvalidArgument("duration too long", fmt::format("'{}'", text));
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(ms)));
  }
  return Status::InvalidArgument("unknown duration unit",
                                 fmt::format("'{}' (use ms, s, m, h, d, w or y)", text));
}

Result<std::chrono::milliseconds> ParseDurationWithUnit(std::string_view text) {
  double number = 0;
  std::string_view unit;
  if (SplitNumber(text, &number, &unit) && unit.empty()) {
    return Status::InvalidArgument(fmt::format("{}: give a unit: {}m, {}s", text, text, text));
  }
  return ParseDuration(text);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr std::array<std::string_view, 5> kNames = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (std::fabs(value) >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit <= 2) return fmt::format("{:.0f} {}", value, kNames[unit]);
  return fmt::format("{:.1f} {}", value, kNames[unit]);
}

std::string FormatDuration(std::chrono::seconds duration) {
  int64_t s = duration.count();
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d {:02}h", s / 86400, (s % 86400) / 3600);
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  int64_t ms = duration.count();
  if (ms % 1000 == 0) return FormatDuration(std::chrono::seconds(ms / 1000));
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000);
  return FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(duration));
}

std::string FormatHours(double hours) {
  if (hours >= 0.995) return fmt::format("{:.1f}h", hours);
  if (hours * 60 >= 0.5) return fmt::format("{:.0f}m", hours * 60);
  return hours > 0 ? "<1m" : "0";
}

std::string Counted(int64_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  return plural.empty() ? fmt::format("{} {}s", n, noun) : fmt::format("{} {}", n, plural);
}

}  // namespace tarmac
