// SPDX-License-Identifier: Apache-2.0
#include "sampler/process_attribution.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <vector>

namespace tarmac::sampler {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
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

std::optional<int64_t> ProcessAttributor::StartTicks(int64_t pid) const {
  std::string stat;
  if (!ReadFile(fmt::format("{}/{}/stat", proc_root_, pid), &stat)) return std::nullopt;
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  // Fields from 3 (state) on; starttime is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  char* end = nullptr;
  long long ticks = std::strtoll(field.c_str(), &end, 10);
  if (end == field.c_str()) return std::nullopt;
  return ticks;
}

ProcessDetails ProcessAttributor::Read(int64_t pid, int64_t start_ticks) const {
  ProcessDetails d;
  d.pid = pid;
  d.start_ticks = start_ticks;
  std::string status;
  if (!ReadFile(fmt::format("{}/{}/status", proc_root_, pid), &status)) return d;
  d.exists = true;
  std::istringstream lines(status);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Uid:", 0) == 0) {
      d.uid = std::strtoll(line.c_str() + 4, nullptr, 10);
    } else if (line.rfind("PPid:", 0) == 0) {
      d.parent_pid = std::strtoll(line.c_str() + 5, nullptr, 10);
    } else if (line.rfind("Name:", 0) == 0) {
      size_t start = line.find_first_not_of(" \t", 5);
      d.name = start == std::string::npos ? "" : line.substr(start);
    }
  }
  d.user = UserName(d.uid);
  std::string cmdline;
  if (ReadFile(fmt::format("{}/{}/cmdline", proc_root_, pid), &cmdline)) {
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    d.command = cmdline;
  }
  if (d.command.empty()) d.command = d.name.empty() ? "?" : "[" + d.name + "]";
  return d;
}

const ProcessDetails& ProcessAttributor::Lookup(int64_t pid) {
  std::optional<int64_t> ticks = StartTicks(pid);
  auto it = cache_.find(pid);
  if (it != cache_.end() && ticks && it->second.exists && it->second.start_ticks == *ticks) {
    return it->second;
  }
  ProcessDetails details;
  if (ticks) {
    details = Read(pid, *ticks);
  } else {
    details.pid = pid;
    details.user = "?";
    details.command = "?";
  }
  return cache_[pid] = std::move(details);
}

}  // namespace tarmac::sampler
