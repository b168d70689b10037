// SPDX-License-Identifier: Apache-2.0
#include "sim/exit_watch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace tarmac::sim {

ExitWatch::~ExitWatch() { Close(); }

void ExitWatch::Close() {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
  is_gone_ = false;
}

void ExitWatch::Watch(const std::vector<int64_t>& pids) {
  Close();
  for (int64_t pid : pids) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
    if (fd >= 0) {
      fds_.push_back(fd);
    } else if (errno == ESRCH) {
      is_gone_ = true;
    }
  }
}

bool ExitWatch::AnyExited() const {
  if (is_gone_) return true;
  if (fds_.empty()) return false;
  std::vector<pollfd> polls;
  polls.reserve(fds_.size());
  for (int fd : fds_) polls.push_back({fd, POLLIN, 0});
  return ::poll(polls.data(), polls.size(), 0) > 0;
}

}  // namespace tarmac::sim
