// SPDX-License-Identifier: Apache-2.0
#include "sampler/process_attribution.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/pidfd.h"
#include "common/proc_files.h"

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

namespace {

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

}  // namespace

ProcessAttributor::ProcessAttributor(std::string proc_root, bool use_pidfds)
    : proc_root_(std::move(proc_root)) {
  if (use_pidfds) UsePidfds();
}

void ProcessAttributor::UsePidfds() {
  if (proc_root_ != "/proc") return;
  // Probe once: kernels before 5.3, or a seccomp filter, say ENOSYS/EPERM.
  int fd = PidfdOpen(getpid());
  use_pidfds_ = fd >= 0;
  if (fd >= 0) ::close(fd);
}

ProcessAttributor::~ProcessAttributor() {
  for (auto& [pid, entry] : cache_) CloseFd(&entry.fd);
}

ProcessAttributor::ProcessAttributor(ProcessAttributor&& other) noexcept
    : proc_root_(std::move(other.proc_root_)),
      use_pidfds_(other.use_pidfds_),
      container_names_(std::move(other.container_names_)),
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
    CloseFd(&it->second.fd);
    it = cache_.erase(it);
  }
}

bool ProcessAttributor::IsAlive(const Entry& e) {
  if (e.fd < 0) return false;
  if (e.is_pidfd) {
    struct pollfd p {
      e.fd, POLLIN, 0
    };
    return ::poll(&p, 1, 0) == 0;
  }
  char probe[64];
  return ::pread(e.fd, probe, sizeof probe, 0) > 0;
}

void ProcessAttributor::BeginTick() {
  std::vector<struct pollfd> fds;
  std::vector<Entry*> entries;
  for (auto& [pid, entry] : cache_) {
    entry.is_checked = false;
    if (entry.fd < 0) continue;
    if (!entry.is_pidfd) {
      entry.is_checked = IsAlive(entry);
      if (!entry.is_checked) CloseFd(&entry.fd);
      continue;
    }
    fds.push_back(pollfd{entry.fd, POLLIN, 0});
    entries.push_back(&entry);
  }
  if (fds.empty()) return;
  if (::poll(fds.data(), fds.size(), 0) < 0) return;  // Lookups then check one by one.
  for (size_t i = 0; i < fds.size(); ++i) {
    entries[i]->is_checked = fds[i].revents == 0;
    if (!entries[i]->is_checked) CloseFd(&entries[i]->fd);
  }
}

const node::ProcessDetails& ProcessAttributor::Lookup(int64_t pid) {
  auto it = cache_.find(pid);
  if (it != cache_.end() && it->second.fd >= 0) {
    // Still the same process instance: the cached details hold.
    if (it->second.is_checked || IsAlive(it->second)) return it->second.details;
    CloseFd(&it->second.fd);
  }
  std::string dir = fmt::format("{}/{}", proc_root_, pid);
  Entry& entry = cache_[pid];
  CloseFd(&entry.fd);
  entry = Entry{};
  node::ProcessDetails& d = entry.details;
  d.pid = pid;
  d.user = "?";
  d.command = "?";
  // The pidfd is taken first: if the process is still alive after /proc is
  // read, what was read is this process's.
  int pidfd = use_pidfds_ ? PidfdOpen(pid) : -1;
  if (use_pidfds_ && pidfd < 0) return d;
  int fd = ::open((dir + "/stat").c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    CloseFd(&pidfd);
    return d;
  }
  char buf[1024];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::optional<ProcStat> stat;
  if (n > 0) stat = ParseProcStat(std::string(buf, static_cast<size_t>(n)));
  if (!stat) {
    ::close(fd);
    CloseFd(&pidfd);
    return d;
  }
  d.name = stat->name;
  d.parent_pid = stat->parent_pid;
  d.start_ticks = stat->start_ticks;
  // The owner of /proc/<pid> and its files is the process's effective uid.
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    CloseFd(&pidfd);
    return d;
  }
  if (pidfd >= 0) {
    ::close(fd);
    entry.fd = pidfd;
    entry.is_pidfd = true;
  } else {
    entry.fd = fd;
  }
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
  if (!d.cgroup.container_id.empty()) d.kubernetes = container_names_.Lookup(d.cgroup.container_id);
  if (entry.is_pidfd && !IsAlive(entry)) {  // Exited (or replaced) while being read.
    CloseFd(&entry.fd);
    d = node::ProcessDetails{};
    d.pid = pid;
    d.user = "?";
    d.command = "?";
  }
  return d;
}

}  // namespace tarmac::sampler
