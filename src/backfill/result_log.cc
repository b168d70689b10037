// SPDX-License-Identifier: Apache-2.0
#include "backfill/result_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/safe_file.h"

namespace tarmac::backfill {
namespace {

using nlohmann::json;

Status IoError(const std::string& path, const char* doing) {
  int e = errno;
  std::string message = fmt::format("{}: {}: {}", path, doing, std::strerror(e));
  if (e == ENOSPC || e == EDQUOT)
    return Status::ResourceExhausted(message, "free space on that file system; nothing was lost");
  return Status::IOError(message);
}

}  // namespace

Result<std::unique_ptr<ResultLog>> ResultLog::Open(const std::string& path, int mode) {
  // O_NONBLOCK: a FIFO planted at the path is refused below, never waited on.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode & 0666);
  if (fd < 0) return IoError(path, "cannot open the results file");
  std::unique_ptr<ResultLog> log(new ResultLog(path, fd));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return IoError(path, "cannot read the results file");
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(
        fmt::format("{}: is {}, not a regular file", path, FileKindName(st.st_mode)));
  }
  int blocking = ::fcntl(fd, F_GETFL);
  if (blocking >= 0) ::fcntl(fd, F_SETFL, blocking & ~O_NONBLOCK);
  log->file_id_ = FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(path, "cannot read the results file");
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  size_t whole = 0;  // Bytes up to the end of the last good line.
  size_t at = 0;
  int64_t line = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    ++line;
    bool is_last = end == std::string::npos || end + 1 == text.size();
    std::string_view raw =
        std::string_view(text).substr(at, (end == std::string::npos ? text.size() : end) - at);
    json j = json::parse(raw, nullptr, false);
    bool is_good = end != std::string::npos && !j.is_discarded() && j.is_object() &&
                   j.contains("custom_id") && j["custom_id"].is_string();
    if (!is_good) {
      if (!is_last) {
        return Status::Corruption(
            fmt::format("{}:{}: not a result line (a torn line can only be the last)", path, line),
            "the file was changed by something else; move it aside to start again");
      }
      break;  // A writer killed mid-line: cut it off.
    }
    if (!log->done_.insert(j["custom_id"].get<std::string>()).second) {
      return Status::Corruption(fmt::format("{}:{}: custom_id \"{}\" appears twice", path, line,
                                            j["custom_id"].get<std::string>()));
    }
    whole = end + 1;
    at = end + 1;
  }
  if (whole < text.size()) {
    if (::ftruncate(fd, static_cast<off_t>(whole)) != 0)
      return IoError(path, "cannot cut off a torn last line");
    if (::fdatasync(fd) != 0) return IoError(path, "cannot sync");
    log->repaired_bytes_ = text.size() - whole;
  }
  log->size_ = static_cast<off_t>(whole);
  return log;
}

ResultLog::~ResultLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status ResultLog::Append(const json& line) {
  if (!line.is_object() || !line.contains("custom_id") || !line["custom_id"].is_string()) {
    return Status::InvalidArgument("a result line needs a string custom_id");
  }
  std::string id = line["custom_id"].get<std::string>();
  if (done_.count(id) != 0) {
    return Status::FailedPrecondition(fmt::format("{}: custom_id \"{}\" is already done", path_, id));
  }
  std::string text = line.dump() + "\n";
  ssize_t n = ::pwrite(fd_, text.data(), text.size(), size_);
  Status s;
  if (n < 0) {
    s = IoError(path_, "cannot write a result");
  } else if (n != static_cast<ssize_t>(text.size())) {
    s = Status::ResourceExhausted(
        fmt::format("{}: cannot write a result: only {} of {} bytes fit", path_, n, text.size()),
        "free space on that file system; nothing was lost");
  } else if (::fdatasync(fd_) != 0) {
    s = IoError(path_, "cannot sync a result");
  }
  if (!s.ok()) {
    if (::ftruncate(fd_, size_) != 0) {
      return Status::IOError(
          fmt::format("{}; and cutting the partial line off failed: {}", s.message(), std::strerror(errno)));
    }
    return s;
  }
  size_ += static_cast<off_t>(text.size());
  done_.insert(std::move(id));
  return Status::OK();
}

}  // namespace tarmac::backfill
