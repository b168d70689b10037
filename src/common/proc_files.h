// SPDX-License-Identifier: Apache-2.0
//
// Reading small files with plain read(2) (no stream machinery: /proc files
// are read for every GPU process; scenarios and configs go the same way), and
// the fields of /proc/<pid>/stat that tarmac uses. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tarmac {

// Reads the whole file at `path` (at most `max_bytes`) into *out through
// the foreign-file helper (safe_file.h: no link followed, non-blocking
// open, regular files only). Returns false when it cannot be opened or read
// (absent, a link, a FIFO, a directory, an I/O error).
bool ReadSmallFile(const std::string& path, std::string* out, size_t max_bytes = 1 << 16);

// The same for a file an operator names (a config, a scenario): a link as
// its last component is followed; still non-blocking and regular only.
bool ReadOperatorFile(const std::string& path, std::string* out, size_t max_bytes = 1 << 16);

struct ProcStat {
  std::string name;         // Field 2, without the parentheses; may hold spaces.
  char state = '?';         // Field 3: R, S, D, Z, X, ...
  int64_t parent_pid = 0;   // Field 4.
  int64_t cpu_ticks = 0;    // Fields 14 + 15: user and system CPU time, clock ticks.
  int64_t start_ticks = 0;  // Field 22: clock ticks after boot.
};

// Parses the text of /proc/<pid>/stat. Empty when malformed (a CPU time or
// start time that is not a count).
std::optional<ProcStat> ParseProcStat(const std::string& text);

// Whether the process has exited (a zombie not yet reaped, or dead).
inline bool HasExited(const ProcStat& stat) { return stat.state == 'Z' || stat.state == 'X'; }

// Start time of `pid` (clock ticks after boot) while it lives; empty when
// it does not exist or has exited. With the PID, it tells one process from
// a later one that reuses the PID.
std::optional<int64_t> LiveStartTicks(int64_t pid);

}  // namespace tarmac
