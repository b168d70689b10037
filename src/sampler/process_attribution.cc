// SPDX-License-Identifier: Apache-2.0
#include "sampler/process_attribution.h"

#include "common/proc_files.h"

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
  std::string text;
  ProcessDetails d;
  d.pid = pid;
  d.user = "?";
  d.command = "?";
  std::optional<ProcStat> stat;
  if (ReadSmallFile(dir + "/stat", &text)) stat = ParseProcStat(text);
  if (!stat) return cache_[pid] = std::move(d);
  d.name = stat->name;
  d.parent_pid = stat->parent_pid;
  d.start_ticks = stat->start_ticks;
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
  if (ReadSmallFile(dir + "/cmdline", &cmdline)) {
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
  }
  d.command = !cmdline.empty() ? cmdline : "[" + d.name + "]";
  std::string cgroup;
  if (ReadSmallFile(dir + "/cgroup", &cgroup)) d.cgroup = ParseCgroup(cgroup);
  return cache_[pid] = std::move(d);
}

}  // namespace tarmac::sampler
