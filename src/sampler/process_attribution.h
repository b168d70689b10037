// SPDX-License-Identifier: Apache-2.0
//
// Who a GPU process is, from /proc: owner, command line, start time and
// parent. ProcessAttributor caches what it learnt and keeps a descriptor
// that refers to the process instance, not to its PID: a pidfd
// (pidfd_open(2)), which becomes readable when the process exits, or, where
// pidfds are unavailable (and over a test /proc), /proc/<pid>/stat, which
// stops reading once the process is gone. So a reused PID is never mistaken
// for the old process. BeginTick checks every cached pidfd with one poll(2);
// a cache hit after it costs no system call.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sampler/cgroup.h"
#include "sampler/container_names.h"

namespace tarmac::sampler {

class ProcessAttributor {
 public:
  // `proc_root` is "/proc" except in tests. `use_pidfds`: keep pidfds where
  // the kernel has them (long-running readers: a tick then costs one poll);
  // one-shot readers keep /proc/<pid>/stat, which costs nothing extra.
  explicit ProcessAttributor(std::string proc_root = "/proc", bool use_pidfds = false);

  ~ProcessAttributor();
  ProcessAttributor(ProcessAttributor&& other) noexcept;
  ProcessAttributor& operator=(ProcessAttributor&&) = delete;
  ProcessAttributor(const ProcessAttributor&) = delete;
  ProcessAttributor& operator=(const ProcessAttributor&) = delete;

  // Switches to pidfds from the next new process on (see the constructor).
  void UsePidfds();

  // Where to look for container bundles (container_names.h); the runtimes'
  // usual places by default.
  void SetRuntimeStateDirs(std::vector<std::string> dirs) {
    container_names_ = ContainerNames(std::move(dirs));
  }

  // Drops every cached process that has exited: one poll(2) over the kept
  // pidfds. Lookups until the next BeginTick trust the survivors.
  void BeginTick();

  // Details for `pid`, from the cache when the process is the same one.
  const node::ProcessDetails& Lookup(int64_t pid);

  // Forgets every cached process not in `live` (closing its descriptor).
  void Retain(const std::vector<int64_t>& live);

 private:
  std::string proc_root_;
  struct Entry {
    node::ProcessDetails details;
    int fd = -1;  // pidfd, or /proc/<pid>/stat of this instance.
    bool is_pidfd = false;
    bool is_checked = false;  // Seen alive by the last BeginTick.
  };
  // Whether the process behind `e.fd` is still running.
  static bool IsAlive(const Entry& e);
  bool use_pidfds_ = false;
  ContainerNames container_names_;
  std::map<int64_t, Entry> cache_;
  mutable std::map<int64_t, std::string> user_names_;  // By uid: NSS lookups are slow.
};

// Login name for `uid`, or the number as text.
std::string UserName(int64_t uid);

}  // namespace tarmac::sampler
