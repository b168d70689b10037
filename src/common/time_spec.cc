// SPDX-License-Identifier: Apache-2.0
#include "common/time_spec.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cctype>
#include <ctime>
#include <string>

#include "common/units.h"

namespace tarmac {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "YYYY-MM-DD[(T| )HH:MM[:SS]][Z]" as UTC.
bool ParseCalendar(std::string_view text, int64_t* out) {
  std::string s(text);
  if (!s.empty() && (s.back() == 'Z' || s.back() == 'z')) s.pop_back();
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char sep = 0;
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &year, &month, &day, &consumed) != 3 || consumed != 10)
    return false;
  if (s.size() > 10) {
    sep = s[10];
    if (sep != 'T' && sep != ' ') return false;
    std::string rest = s.substr(11);
    int n = 0;
    if (std::sscanf(rest.c_str(), "%2d:%2d%n", &hour, &minute, &n) != 2 || n != 5) return false;
    if (rest.size() > 5) {
      int m = 0;
      if (rest[5] != ':' || std::sscanf(rest.c_str() + 6, "%2d%n", &second, &m) != 1 || m != 2 ||
          rest.size() != 8) {
        return false;
      }
    }
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 ||
      year < 1970) {
    return false;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  *out = static_cast<int64_t>(timegm(&tm));
  return true;
}

}  // namespace

Result<int64_t> ParseTimeSpec(std::string_view text, int64_t now_unix) {
  if (text == "now") return now_unix;
  if (!text.empty() && text[0] == '@' && AllDigits(text.substr(1)) && text.size() <= 13) {
    return static_cast<int64_t>(std::stoll(std::string(text.substr(1))));
  }
  int64_t t = 0;
  if (ParseCalendar(text, &t)) return t;
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])) && !AllDigits(text)) {
    Result<std::chrono::milliseconds> ago = ParseDuration(text);
    if (ago.ok()) return now_unix - ago.value().count() / 1000;
  }
  return Status::InvalidArgument(fmt::format("'{}' is not a time", text),
                                 "use a duration ago (6h, 7d), now, a date (2026-11-29), a UTC date and time "
                                 "(2026-11-29T14:00) or @UNIX");
}

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", utc, ms % 1000);
}

std::string FormatUtc(int64_t unix_seconds, bool with_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, with_seconds ? "%Y-%m-%d %H:%M:%S UTC" : "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace tarmac
