// SPDX-License-Identifier: Apache-2.0
#include "common/log.h"

#include <unistd.h>

#include <string>

#include "common/enum_names.h"

namespace tarmac {

void Logger::Write(LogLevel level, std::string_view line) {
  static constexpr std::string_view kNames[] = {"debug", "info", "warning", "error", "off"};
  std::string out = fmt::format("tarmac: {}: {}\n", kNames[static_cast<int>(level)], line);
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  static constexpr std::pair<LogLevel, const char*> kNames[] = {{LogLevel::kWarning, "warning"},
                                                                {LogLevel::kDebug, "debug"},
                                                                {LogLevel::kInfo, "info"},
                                                                {LogLevel::kError, "error"},
                                                                {LogLevel::kOff, "off"}};
  return ParseEnum(kNames, text, level);
}

}  // namespace tarmac
