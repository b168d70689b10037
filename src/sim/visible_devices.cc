// SPDX-License-Identifier: Apache-2.0
#include "sim/visible_devices.h"

#include <algorithm>
#include <cctype>

#include "common/split.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::sim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Resolves one entry to a physical index, or -1.
int Resolve(std::string_view entry, const std::vector<std::string>& uuids, size_t numbered) {
  if (entry.empty()) return -1;
  bool is_number = std::all_of(entry.begin(), entry.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (is_number) {
    if (entry.size() > 6) return -1;
    int index = 0;
    for (char c : entry) index = index * 10 + (c - '0');
    return index < static_cast<int>(std::min(uuids.size(), numbered)) ? index : -1;
  }
  std::string prefix(entry);
  if (prefix.rfind("GPU-", 0) != 0 && !nvidia::IsMigUuid(prefix)) prefix = "GPU-" + prefix;
  int found = -1;
  for (size_t i = 0; i < uuids.size(); ++i) {
    if (uuids[i].rfind(prefix, 0) == 0) {
      if (found >= 0) return -1;  // Ambiguous prefix.
      found = static_cast<int>(i);
    }
  }
  return found;
}

}  // namespace

std::vector<int> ParseCudaVisibleDevices(std::optional<std::string_view> value,
                                         const std::vector<std::string>& uuids, size_t numbered) {
  std::vector<int> devices;
  if (!value) {
    for (size_t i = 0; i < uuids.size(); ++i) devices.push_back(static_cast<int>(i));
    return devices;
  }
  for (const std::string& entry : SplitCommas(*value, Empties::kKeep)) {
    int index = Resolve(Trim(entry), uuids, numbered);
    if (index < 0) break;  // As CUDA: the list ends at the first entry that names no device.
    if (std::find(devices.begin(), devices.end(), index) != devices.end()) return {};
    devices.push_back(index);
  }
  return devices;
}

}  // namespace tarmac::sim
