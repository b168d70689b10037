// SPDX-License-Identifier: Apache-2.0
#include "sim/exit_watch.h"

#include <unistd.h>

#include <cerrno>

#include "common/pidfd.h"

namespace tarmac::sim {

ExitWatch::~ExitWatch() { Close(); }

void ExitWatch::Close() {
  for (const pollfd& p : polls_) ::close(p.fd);
  polls_.clear();
  is_gone_ = false;
}

void ExitWatch::Watch(const std::vector<int64_t>& pids) {
  Close();
  for (int64_t pid : pids) {
    int fd = PidfdOpen(pid);
    if (fd >= 0) {
      polls_.push_back({fd, POLLIN, 0});
    } else if (errno == ESRCH) {
      is_gone_ = true;
    }
  }
}

bool ExitWatch::AnyExited() {
  if (is_gone_) return true;
  return !polls_.empty() && ::poll(polls_.data(), polls_.size(), 0) > 0;
}

}  // namespace tarmac::sim
