// SPDX-License-Identifier: Apache-2.0
#include "sampler/cgroup.h"

#include <cctype>
#include <vector>

namespace tarmac::sampler {
namespace {

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// The 64-hex id in a component such as "docker-<id>.scope",
// "cri-containerd-<id>.scope", "crio-<id>.scope", "libpod-<id>.scope" or a
// bare "<id>".
std::string ContainerId(std::string_view component) {
  std::string_view c = component;
  if (c.size() > 6 && c.substr(c.size() - 6) == ".scope") c.remove_suffix(6);
  size_t dash = c.rfind('-');
  std::string_view id = dash == std::string_view::npos ? c : c.substr(dash + 1);
  if (id.size() == 64 && IsHex(id)) return std::string(id);
  return {};
}

// "pod<uid>" or "kubepods-burstable-pod<uid_with_underscores>.slice".
std::string PodUid(std::string_view component) {
  size_t pos = component.rfind("pod");
  if (pos == std::string_view::npos) return {};
  std::string_view rest = component.substr(pos + 3);
  if (rest.size() > 6 && rest.substr(rest.size() - 6) == ".slice") rest.remove_suffix(6);
  if (rest.size() != 36) return {};
  std::string uid(rest);
  for (char& ch : uid) {
    if (ch == '_') ch = '-';
  }
  for (size_t i = 0; i < uid.size(); ++i) {
    bool is_dash_slot = i == 8 || i == 13 || i == 18 || i == 23;
    if (is_dash_slot ? uid[i] != '-' : !std::isxdigit(static_cast<unsigned char>(uid[i]))) return {};
  }
  return uid;
}

}  // namespace

node::CgroupIdentity ParseCgroup(std::string_view text) {
  node::CgroupIdentity id;
  for (std::string_view line : Split(text, '\n')) {
    // "hierarchy-ID:controller-list:path"; the path may contain ':'.
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view path = line.substr(second + 1);
    for (std::string_view component : Split(path, '/')) {
      if (id.container_id.empty()) id.container_id = ContainerId(component);
      if (id.pod_uid.empty() && component.find("pod") != std::string_view::npos)
        id.pod_uid = PodUid(component);
      if (id.slurm_job_id.empty() && component.rfind("job_", 0) == 0 && component.size() > 4) {
        std::string_view job = component.substr(4);
        bool is_number = true;
        for (char c : job) is_number &= std::isdigit(static_cast<unsigned char>(c)) != 0;
        if (is_number) id.slurm_job_id = std::string(job);
      }
      bool is_unit = (component.size() > 8 && component.substr(component.size() - 8) == ".service") ||
                     (component.size() > 6 && component.substr(component.size() - 6) == ".scope");
      // The innermost unit wins, but not the user manager or a container's
      // own scope.
      if (is_unit && component.rfind("user@", 0) != 0 && ContainerId(component).empty()) {
        id.systemd_unit = std::string(component);
      }
    }
  }
  return id;
}

}  // namespace tarmac::sampler
