// SPDX-License-Identifier: Apache-2.0
//
// Minimal leveled logging to stderr. A Logger is passed to the code that logs
// (no global logger); a Logger at LogLevel::kOff discards everything. Thread-safe: each line
// is written with one write(2).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <string_view>

#include "common/terminal_text.h"

namespace tarmac {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::kWarning) : level_(level) {}
  virtual ~Logger() = default;

  LogLevel level() const { return level_.load(std::memory_order_relaxed); }
  void set_level(LogLevel level) { level_.store(level, std::memory_order_relaxed); }

  template <typename... Args>
  void Log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    if (level < this->level()) return;
    // A line may quote foreign strings (a process's command, a user's batch
    // name): it is written through the one terminal filter, so a log read
    // on a terminal (journalctl, tail) holds no escape and no forged line.
    Write(level, ForTerminal(fmt::format(format, std::forward<Args>(args)...)));
  }

 protected:
  // Writes one finished line. The default writes "tarmac: <level>: line" to
  // stderr.
  virtual void Write(LogLevel level, std::string_view line);

 private:
  std::atomic<LogLevel> level_;
};

// Parses "debug", "info", "warning", "error", "off".
bool ParseLogLevel(std::string_view text, LogLevel* level);

}  // namespace tarmac
