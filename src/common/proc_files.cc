// SPDX-License-Identifier: Apache-2.0
#include "common/proc_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/safe_file.h"

namespace tarmac {

namespace {

bool ReadInto(const std::string& path, const ForeignFileOptions& options, std::string* out) {
  Result<std::string> text = ReadForeignFile(path, options);
  if (!text.ok()) return false;
  *out = std::move(text).value();
  return true;
}

}  // namespace

bool ReadSmallFile(const std::string& path, std::string* out, size_t max_bytes) {
  return ReadInto(path, {.max_bytes = max_bytes}, out);
}

bool ReadOperatorFile(const std::string& path, std::string* out, size_t max_bytes) {
  return ReadInto(path, {.max_bytes = max_bytes, .follow_final_link = true}, out);
}

std::optional<ProcStat> ParseProcStat(const std::string& text) {
  // The name (field 2) may hold spaces and parentheses; everything after the
  // last ')' is plain space-separated fields.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || close + 2 >= text.size()) {
    return std::nullopt;
  }
  ProcStat stat;
  stat.name = text.substr(open + 1, close - open - 1);
  const char* p = text.c_str() + close + 2;
  stat.state = *p;
  // A count of clock ticks: digits, ended by a space or the text's end.
  auto ticks = [](const char* at, int64_t* out) {
    char* end = nullptr;
    *out = std::strtoll(at, &end, 10);
    return end != at && *out >= 0 && (*end == ' ' || *end == '\n' || *end == '\0');
  };
  for (int field = 3; field <= 22; ++field) {
    if (field == 4) stat.parent_pid = std::strtoll(p, nullptr, 10);
    int64_t t = 0;
    if ((field == 14 || field == 15) && !ticks(p, &t)) return std::nullopt;
    stat.cpu_ticks += field == 14 || field == 15 ? t : 0;
    if (field == 22) {
      // A start time is a count of ticks since boot: never negative.
      if (!ticks(p, &stat.start_ticks)) return std::nullopt;
      return stat;
    }
    p = std::strchr(p, ' ');
    if (p == nullptr) return std::nullopt;
    ++p;
  }
  return std::nullopt;
}

std::optional<int64_t> LiveStartTicks(int64_t pid) {
  std::string text;
  if (!ReadSmallFile("/proc/" + std::to_string(pid) + "/stat", &text)) return std::nullopt;
  std::optional<ProcStat> stat = ParseProcStat(text);
  if (!stat || HasExited(*stat)) return std::nullopt;
  return stat->start_ticks;
}

}  // namespace tarmac
