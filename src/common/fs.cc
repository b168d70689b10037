// SPDX-License-Identifier: Apache-2.0
#include "common/fs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tarmac {

Status MakeDirs(const std::string& path) {
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::IOError(fmt::format("cannot create {}", partial), std::strerror(errno));
    }
  }
  return Status::OK();
}

std::optional<FileId> FileIdOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

std::optional<FileId> FileIdOfFd(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string() : path.substr(0, slash);
}

Status WriteFileAtomically(const std::string& path, const std::string& text, int mode) {
  // A fresh temp file of our own: O_EXCL never opens what is already there
  // (a planted file or link), O_NOFOLLOW never follows a link. One left by
  // a crash of this same PID is removed (unlink removes a link, never what
  // it points to) and the create tried once more.
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(tmp.c_str(), flags, mode);
  if (fd < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0) fd = ::open(tmp.c_str(), flags, mode);
  if (fd < 0) return Status::IOError(fmt::format("cannot write {}", tmp), std::strerror(errno));
  size_t at = 0;
  while (at < text.size()) {
    ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  int error = at == text.size() ? 0 : (errno != 0 ? errno : EIO);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  ::close(fd);
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    return Status::IOError(fmt::format("cannot write {}", path), std::strerror(error));
  }
  return Status::OK();
}

}  // namespace tarmac
