// SPDX-License-Identifier: Apache-2.0
//
// Who a GPU process is, from /proc: owner, command line, start time and
// parent. ProcessAttributor caches what it learnt and keeps
// /proc/<pid>/stat open for each cached process: that descriptor refers to
// the process instance, so once the process exits a read on it fails, even
// if a new process has taken the PID. A cache hit costs one pread(2), and a
// reused PID is never mistaken for the old process.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sampler/cgroup.h"

namespace tarmac::sampler {

struct ProcessDetails {
  int64_t pid = 0;
  bool exists = false;  // False when /proc has no such process (or no access).
  int64_t uid = -1;    // Effective uid (owner of /proc/<pid>).
  std::string user;     // Login name, or the uid as text when unknown.
  std::string name;     // /proc/<pid>/comm
  std::string command;  // Command line, arguments joined by spaces.
  int64_t parent_pid = 0;
  int64_t start_ticks = 0;  // Clock ticks after boot (/proc/<pid>/stat).
  CgroupIdentity cgroup;    // Container, pod, systemd unit, Slurm job.
};

class ProcessAttributor {
 public:
  // `proc_root` is "/proc" except in tests.
  explicit ProcessAttributor(std::string proc_root = "/proc");

  ~ProcessAttributor();
  ProcessAttributor(ProcessAttributor&& other) noexcept;
  ProcessAttributor& operator=(ProcessAttributor&&) = delete;
  ProcessAttributor(const ProcessAttributor&) = delete;
  ProcessAttributor& operator=(const ProcessAttributor&) = delete;

  // Details for `pid`, from the cache when the process is the same one.
  const ProcessDetails& Lookup(int64_t pid);

  // Forgets every cached process not in `live` (closing its descriptor).
  void Retain(const std::vector<int64_t>& live);

 private:
  std::string proc_root_;
  struct Entry {
    ProcessDetails details;
    int stat_fd = -1;  // /proc/<pid>/stat of this process instance.
  };
  std::map<int64_t, Entry> cache_;
  mutable std::map<int64_t, std::string> user_names_;  // By uid: NSS lookups are slow.
};

// Login name for `uid`, or the number as text.
std::string UserName(int64_t uid);

}  // namespace tarmac::sampler
