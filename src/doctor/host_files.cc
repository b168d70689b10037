// SPDX-License-Identifier: Apache-2.0
#include "doctor/host_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/proc_files.h"
#include "common/safe_file.h"

namespace tarmac::doctor {

HostFiles::HostFiles(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string HostFiles::Path(const std::string& path) const { return root_ == "/" ? path : root_ + path; }

bool HostFiles::IsPastDeadline() const {
  if (deadline_ && clock_->SteadyNow() >= *deadline_) timed_out_ = true;
  return timed_out_;
}

std::optional<std::string> HostFiles::Read(const std::string& path, size_t max_bytes) const {
  if (IsPastDeadline()) return std::nullopt;
  std::string text;
  if (!ReadSmallFile(Path(path), &text, max_bytes)) return std::nullopt;
  return text;
}

std::vector<std::string> HostFiles::List(const std::string& dir) const {
  std::vector<std::string> names;
  if (IsPastDeadline()) return names;
  DIR* d = ::opendir(Path(dir).c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string HostFiles::LinkName(const std::string& path) const {
  char target[4096];
  ssize_t n = ::readlink(Path(path).c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  std::string t(target, static_cast<size_t>(n));
  size_t slash = t.rfind('/');
  return slash == std::string::npos ? t : t.substr(slash + 1);
}

bool HostFiles::Exists(const std::string& path) const {
  struct stat st {};
  return ::stat(Path(path).c_str(), &st) == 0;
}

Result<std::string> HostFiles::KernelLog() const {
  std::string path = Path("/dev/kmsg");
  if (IsPastDeadline())
    return Status::DeadlineExceeded(fmt::format("{}: not read: the doctor's time ran out", path));
  // Non-blocking, no link followed; a character device (the kernel's) or
  // a regular file (a saved log, a test's tree), never a FIFO.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISREG(st.st_mode)))) {
    ::close(fd);
    return Status::NotFound(fmt::format("{}: is {}, not the kernel log", path, FileKindName(st.st_mode)));
  }
  if (fd < 0) {
    int e = errno;
    if (e == EPERM || e == EACCES) {
      return Status::PermissionDenied(
          fmt::format("{}: {} (reading the kernel log needs root)", path, std::strerror(e)));
    }
    return Status::NotFound(fmt::format("{}: {}", path, std::strerror(e)));
  }
  constexpr size_t kMaxBytes = 8 << 20;
  std::string text;
  char record[8192];
  while (text.size() < kMaxBytes) {
    ssize_t n = ::read(fd, record, sizeof record);
    if (n > 0) {
      text.append(record, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) continue;  // Records were overwritten while reading: go on with the next.
    break;                                  // 0: the end of a plain file; EAGAIN: no more records now.
  }
  ::close(fd);
  return text;
}

}  // namespace tarmac::doctor
