// SPDX-License-Identifier: Apache-2.0
#include "sampler/process_attribution.h"

#include "common/proc_files.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <vector>

namespace tarmac::sampler {
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

ProcessAttributor::~ProcessAttributor() {
  for (auto& [pid, entry] : cache_) {
    if (entry.stat_fd >= 0) ::close(entry.stat_fd);
  }
}

ProcessAttributor::ProcessAttributor(ProcessAttributor&& other) noexcept
    : proc_root_(std::move(other.proc_root_)),
      cache_(std::move(other.cache_)),
      user_names_(std::move(other.user_names_)) {
  other.cache_.clear();
}

void ProcessAttributor::Retain(const std::vector<int64_t>& live) {
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (std::find(live.begin(), live.end(), it->first) != live.end()) {
      ++it;
      continue;
    }
    if (it->second.stat_fd >= 0) ::close(it->second.stat_fd);
    it = cache_.erase(it);
  }
}

const ProcessDetails& ProcessAttributor::Lookup(int64_t pid) {
  auto it = cache_.find(pid);
  if (it != cache_.end() && it->second.stat_fd >= 0) {
    char probe[64];
    // Still the same process instance: the cached details hold.
    if (::pread(it->second.stat_fd, probe, sizeof probe, 0) > 0) return it->second.details;
    ::close(it->second.stat_fd);
    it->second.stat_fd = -1;
  }
  std::string dir = fmt::format("{}/{}", proc_root_, pid);
  Entry& entry = cache_[pid];
  if (entry.stat_fd >= 0) ::close(entry.stat_fd);
  entry = Entry{};
  ProcessDetails& d = entry.details;
  d.pid = pid;
  d.user = "?";
  d.command = "?";
  int fd = ::open((dir + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return d;
  char buf[1024];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::optional<ProcStat> stat;
  if (n > 0) stat = ParseProcStat(std::string(buf, static_cast<size_t>(n)));
  if (!stat) {
    ::close(fd);
    return d;
  }
  d.name = stat->name;
  d.parent_pid = stat->parent_pid;
  d.start_ticks = stat->start_ticks;
  // The owner of /proc/<pid> is the process's effective uid.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    ::close(fd);
    return d;
  }
  entry.stat_fd = fd;
  d.exists = true;
  d.uid = st.st_uid;
  auto known = user_names_.find(d.uid);
  if (known == user_names_.end()) known = user_names_.emplace(d.uid, UserName(d.uid)).first;
  d.user = known->second;
  std::string cmdline;
  if (ReadSmallFile(dir + "/cmdline", &cmdline)) {
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
  }
  d.command = !cmdline.empty() ? cmdline : "[" + d.name + "]";
  std::string cgroup;
  if (ReadSmallFile(dir + "/cgroup", &cgroup)) d.cgroup = ParseCgroup(cgroup);
  return d;
}

}  // namespace tarmac::sampler
