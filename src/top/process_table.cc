// SPDX-License-Identifier: Apache-2.0
#include "top/process_table.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

namespace tarmac::top {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// -1, 0 or 1 by the key; absent values last whichever the direction.
int Compare(const TopProcess& a, const TopProcess& b, SortKey key) {
  auto num = [](const auto& x, const auto& y) {
    if (!x && !y) return 0;
    if (!x) return 2;  // Absent: last.
    if (!y) return -2;
    return *x < *y ? -1 : *x > *y ? 1 : 0;
  };
  switch (key) {
    case SortKey::kGpu:
      return a.gpu < b.gpu ? -1 : a.gpu > b.gpu;
    case SortKey::kPid:
      return a.pid < b.pid ? -1 : a.pid > b.pid;
    case SortKey::kUser:
      return a.user.compare(b.user) < 0 ? -1 : a.user.compare(b.user) > 0;
    case SortKey::kGpuMemory:
      return num(a.gpu_memory_bytes, b.gpu_memory_bytes);
    case SortKey::kSm:
      return num(a.sm_ratio, b.sm_ratio);
    case SortKey::kCpu:
      return num(a.cpu_ratio, b.cpu_ratio);
    case SortKey::kHostMemory:
      return num(a.host_memory_bytes, b.host_memory_bytes);
    case SortKey::kElapsed:
      return num(a.elapsed_seconds, b.elapsed_seconds);
    case SortKey::kName:
      return a.name.compare(b.name) < 0 ? -1 : a.name.compare(b.name) > 0;
  }
  return 0;
}

bool Before(const TopProcess& a, const TopProcess& b, const TopUi& ui) {
  int c = Compare(a, b, ui.sort);
  if (c == 2 || c == -2) return c < 0;  // Absent values last either way.
  if (c != 0) return ui.is_descending ? c > 0 : c < 0;
  if (a.pid != b.pid) return a.pid < b.pid;
  return a.gpu < b.gpu;
}

}  // namespace

bool MatchesFilter(const TopProcess& p, const std::string& filter) {
  if (filter.empty()) return true;
  std::string f = Lower(filter);
  for (const std::string* field : {&p.name, &p.command, &p.user, &p.holder}) {
    if (Lower(*field).find(f) != std::string::npos) return true;
  }
  return std::to_string(p.pid).find(f) != std::string::npos;
}

std::vector<ProcessRow> VisibleProcesses(const std::vector<TopProcess>& processes, const TopUi& ui) {
  std::vector<const TopProcess*> shown;
  for (const TopProcess& p : processes) {
    if (MatchesFilter(p, ui.filter)) shown.push_back(&p);
  }
  auto before = [&ui](const TopProcess* a, const TopProcess* b) { return Before(*a, *b, ui); };
  std::stable_sort(shown.begin(), shown.end(), before);
  std::vector<ProcessRow> rows;
  if (!ui.is_tree) {
    for (const TopProcess* p : shown) rows.push_back({p, 0});
    return rows;
  }
  // Tree: roots are those whose parent is not shown; each parent's
  // children follow it, in the same order. A process on two GPUs shows
  // under its parent once per GPU.
  std::set<int64_t> pids;
  for (const TopProcess* p : shown) pids.insert(p->pid);
  std::multimap<int64_t, const TopProcess*> children;
  std::vector<const TopProcess*> roots;
  for (const TopProcess* p : shown) {
    if (p->parent_pid != p->pid && pids.count(p->parent_pid) > 0) {
      children.emplace(p->parent_pid, p);
    } else {
      roots.push_back(p);
    }
  }
  std::set<const TopProcess*> placed;
  std::function<void(const TopProcess*, int)> add = [&](const TopProcess* p, int depth) {
    if (!placed.insert(p).second || depth > 32) return;  // A cycle of PIDs: once each.
    rows.push_back({p, depth});
    auto [first, last] = children.equal_range(p->pid);
    std::vector<const TopProcess*> kids;
    for (auto it = first; it != last; ++it) kids.push_back(it->second);
    std::stable_sort(kids.begin(), kids.end(), before);
    for (const TopProcess* k : kids) add(k, depth + 1);
  };
  for (const TopProcess* r : roots) add(r, 0);
  for (const TopProcess* p : shown) add(p, 0);  // Those only a cycle reaches.
  return rows;
}

int RowOf(const std::vector<ProcessRow>& rows, int64_t pid) {
  if (rows.empty()) return -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].process->pid == pid) return static_cast<int>(i);
  }
  return 0;
}

}  // namespace tarmac::top
