// SPDX-License-Identifier: Apache-2.0
#include "common/safe_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tarmac {

std::string FileKindName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

Result<int> OpenForeignFile(const std::string& path, const ForeignFileOptions& options) {
  int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
  if (!options.follow_final_link) flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) return Status::NotFound(fmt::format("{}: {}", path, std::strerror(e)));
    if (e == EACCES || e == EPERM)
      return Status::PermissionDenied(fmt::format("{}: {}", path, std::strerror(e)));
    if (e == ELOOP) return Status::InvalidArgument(fmt::format("{}: is a symbolic link; not followed", path));
    return Status::IOError(fmt::format("{}: {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    ::close(fd);
    if (st.st_mode == 0) return Status::IOError(fmt::format("{}: {}", path, std::strerror(e)));
    return Status::InvalidArgument(
        fmt::format("{}: is {}, not a regular file", path, FileKindName(st.st_mode)));
  }
  return fd;
}

Result<std::string> ReadForeignFile(const std::string& path, const ForeignFileOptions& options) {
  Result<int> fd = OpenForeignFile(path, options);
  if (!fd.ok()) return fd.status();
  std::string out;
  char buf[8192];
  int error = 0;
  while (out.size() < options.max_bytes) {
    ssize_t n = ::read(fd.value(), buf, std::min(sizeof buf, options.max_bytes - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd.value());
  if (error != 0) return Status::IOError(fmt::format("{}: {}", path, std::strerror(error)));
  return out;
}

}  // namespace tarmac
