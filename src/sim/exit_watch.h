// SPDX-License-Identifier: Apache-2.0
//
// Whether any of a set of processes has exited since the set was given:
// one pidfd per process (readable once it has exited, zombie or reaped),
// all asked with one poll(2). The simulated world uses it to drop a cached
// state the moment a load's process exits, as a real driver frees a CUDA
// context's memory when its process exits rather than at its next sample.
//
// Thread safety: none; the caller serializes (World holds its lock).
#pragma once

#include <poll.h>

#include <cstdint>
#include <vector>

namespace tarmac::sim {

class ExitWatch {
 public:
  ExitWatch() = default;
  ~ExitWatch();
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;

  // Watches `pids` from now on (and no longer the ones before). A pid that
  // has no process already counts as exited.
  void Watch(const std::vector<int64_t>& pids);

  // Whether a watched process has exited since Watch. False when nothing is
  // watched; without pidfds (a kernel before 5.3) always false.
  bool AnyExited();

 private:
  void Close();

  std::vector<pollfd> polls_;  // One per watched pidfd, asked for POLLIN.
  bool is_gone_ = false;       // A pid had no process at Watch.
};

}  // namespace tarmac::sim
