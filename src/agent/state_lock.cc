// SPDX-License-Identifier: Apache-2.0
#include "agent/state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>

#include "common/fs.h"

namespace tarmac::agent {

Result<StateLock> StateLock::Acquire(const std::string& state_dir) {
  std::string path = state_dir + "/agent.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    int err = errno;
    std::string why = fmt::format("cannot open the state lock {}: {}", path, std::strerror(err));
    if (err == EACCES || err == EPERM || err == EROFS) {
      return Status::PermissionDenied(why,
                                      "run the agent as a user who may write there, or give it --state-dir");
    }
    return Status::IOError(why);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    if (err == EWOULDBLOCK) {
      return Status::FailedPrecondition(
          fmt::format("another agent (pid {}) is using the state directory {}", holder, state_dir),
          "stop it first, or give this one its own --state-dir");
    }
    return Status::IOError(fmt::format("cannot lock {}: {}", path, std::strerror(err)));
  }
  std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the PID in it; a second agent just cannot name us.
  }
  return StateLock(fd, state_dir);
}

Status StateLock::Reassert() {
  std::optional<FileId> held = fd_ >= 0 ? FileIdOfFd(fd_) : std::nullopt;
  if (held && held == FileIdOf(dir_ + "/agent.lock")) return Status::OK();
  if (Status s = MakeDirs(dir_); !s.ok()) return s;
  Result<StateLock> again = Acquire(dir_);
  if (!again.ok()) return again.status();
  if (fd_ >= 0) ::close(fd_);
  fd_ = again.value().fd_;
  again.value().fd_ = -1;
  return Status::OK();
}

StateLock::~StateLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tarmac::agent
