// SPDX-License-Identifier: Apache-2.0
//
// One agent per state directory: an exclusive lock (flock(2)) on
// <state_dir>/agent.lock, taken before anything else in the directory is
// opened or written and held until the agent exits (the kernel drops it
// when the process dies, even by kill -9). The lock file holds the owner's
// PID, so that a second agent can say which one holds it.
//
// Thread safety: not needed; taken once at start.
#pragma once

#include <string>

#include "common/result.h"

namespace tarmac::agent {

class StateLock {
 public:
  // Takes the lock on `state_dir` (which must exist). kFailedPrecondition
  // naming the holder's PID when another process holds it; kPermissionDenied
  // or kIOError when the lock file cannot be opened.
  static Result<StateLock> Acquire(const std::string& state_dir);

  // Takes the lock again when its file was deleted or replaced under the
  // agent (a deleted state directory): otherwise a second agent could lock
  // a new file there. OK when nothing changed; kFailedPrecondition naming
  // the PID when another agent got there first.
  Status Reassert();

  StateLock(StateLock&& other) noexcept : fd_(other.fd_), dir_(std::move(other.dir_)) { other.fd_ = -1; }
  StateLock& operator=(StateLock&&) = delete;
  StateLock(const StateLock&) = delete;
  ~StateLock();

 private:
  StateLock(int fd, std::string dir) : fd_(fd), dir_(std::move(dir)) {}
  int fd_;
  std::string dir_;
};

}  // namespace tarmac::agent
