// SPDX-License-Identifier: Apache-2.0
#include "sampler/process_attribution.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <vector>

namespace tarmac::sampler {
namespace {

// Reads a small /proc file with one read(2) loop: no stream machinery on a
// path taken for every GPU process.
bool ReadFile(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > (1 << 16)) break;  // Command lines past 64 KiB are cut.
  }
  ::close(fd);
  return true;
}

// Fields of /proc/<pid>/stat after the command name: "S 1 ..." -> field 3
// is state. Returns false when the text is malformed.
bool ParseStat(const std::string& stat, std::string* name, int64_t* parent_pid, int64_t* start_ticks) {
  size_t open = stat.find('(');
  size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || close + 2 >= stat.size()) {
    return false;
  }
  *name = stat.substr(open + 1, close - open - 1);
  const char* p = stat.c_str() + close + 2;
  for (int field = 3; field <= 22; ++field) {
    if (field == 4) *parent_pid = std::strtoll(p, nullptr, 10);
    if (field == 22) {
      char* end = nullptr;
      *start_ticks = std::strtoll(p, &end, 10);
      return end != p;
    }
    p = std::strchr(p, ' ');
    if (p == nullptr) return false;
    ++p;
  }
  return false;
}

}  // namespace

std::string UserName(int64_t uid) {
  if (uid < 0) return "?";
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(4096);
  if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return std::to_string(uid);
}

ProcessAttributor::ProcessAttributor(std::string proc_root) : proc_root_(std::move(proc_root)) {}

const ProcessDetails& ProcessAttributor::Lookup(int64_t pid) {
  std::string dir = fmt::format("{}/{}", proc_root_, pid);
  std::string stat;
  ProcessDetails d;
  d.pid = pid;
  d.user = "?";
  d.command = "?";
  if (!ReadFile(dir + "/stat", &stat) || !ParseStat(stat, &d.name, &d.parent_pid, &d.start_ticks)) {
    return cache_[pid] = std::move(d);
  }
  auto it = cache_.find(pid);
  if (it != cache_.end() && it->second.exists && it->second.start_ticks == d.start_ticks) return it->second;
  // The owner of /proc/<pid> is the process's effective uid.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return cache_[pid] = std::move(d);
  d.exists = true;
  d.uid = st.st_uid;
  auto known = user_names_.find(d.uid);
  if (known == user_names_.end()) known = user_names_.emplace(d.uid, UserName(d.uid)).first;
  d.user = known->second;
  std::string cmdline;
  if (ReadFile(dir + "/cmdline", &cmdline)) {
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
  }
  d.command = !cmdline.empty() ? cmdline : "[" + d.name + "]";
  return cache_[pid] = std::move(d);
}

}  // namespace tarmac::sampler
