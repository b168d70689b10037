// SPDX-License-Identifier: Apache-2.0
#include "common/log.h"

#include <unistd.h>

#include <string>

namespace tarmac {

void Logger::Write(LogLevel level, std::string_view line) {
  static constexpr std::string_view kNames[] = {"debug", "info", "warning", "error", "off"};
  std::string out = fmt::format("tarmac: {}: {}\n", kNames[static_cast<int>(level)], line);
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug") *level = LogLevel::kDebug;
  else if (text == "info") *level = LogLevel::kInfo;
  else if (text == "warning") *level = LogLevel::kWarning;
  else if (text == "error") *level = LogLevel::kError;
  else if (text == "off") *level = LogLevel::kOff;
  else return false;
  return true;
}

}  // namespace tarmac
