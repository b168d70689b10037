// SPDX-License-Identifier: Apache-2.0
//
// The machine's own files as the doctor reads them (/proc, /sys, /dev/kmsg,
// /etc, /usr/bin), all under one root directory: "/" on a real machine, a
// planted tree in tests. The one seam between the doctor and the host.
//
// Thread-compatible (const methods only read the file system).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace tarmac::doctor {

class HostFiles {
 public:
  explicit HostFiles(std::string root = "/");

  // The file at `path` (absolute, as on the machine), at most `max_bytes`;
  // empty when it cannot be read.
  std::optional<std::string> Read(const std::string& path, size_t max_bytes = 1 << 20) const;
  // Names in a directory (without . and ..), sorted; empty when unreadable.
  std::vector<std::string> List(const std::string& dir) const;
  // The last component of a symbolic link's target ("nvidia" for a PCI
  // function's driver link); empty when it is not a link.
  std::string LinkName(const std::string& path) const;
  bool Exists(const std::string& path) const;
  // The kernel log records kept now (/dev/kmsg, read without waiting for
  // new ones; at most 8 MiB). kPermissionDenied when the kernel refuses
  // (dmesg_restrict and not root), kNotFound without one.
  Result<std::string> KernelLog() const;

  const std::string& root() const { return root_; }

  // A budget for all reads: past `deadline` (on `clock`), Read, List and KernelLog
  // answer empty at once and timed_out() turns true, so a host whose files
  // are slow (or hostile) cannot hold a doctor run past it. Every open is
  // non-blocking and of regular files (common/safe_file.h) either way.
  void SetDeadline(std::chrono::steady_clock::time_point deadline, Clock* clock) {
    deadline_ = deadline;
    clock_ = clock;
  }
  bool timed_out() const { return timed_out_; }

 private:
  std::string Path(const std::string& path) const;
  bool IsPastDeadline() const;
  std::string root_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  Clock* clock_ = nullptr;  // What the deadline is read on (SetDeadline).
  mutable bool timed_out_ = false;
};

}  // namespace tarmac::doctor
