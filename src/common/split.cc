// SPDX-License-Identifier: Apache-2.0
#include "common/split.h"

namespace tarmac {

std::vector<std::string> SplitCommas(std::string_view text, Empties empties) {
  std::vector<std::string> out;
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty() || empties == Empties::kKeep) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<std::string_view> SplitAt(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t end = text.find(separator);
    if (std::string_view item = text.substr(0, end); !item.empty()) out.push_back(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace tarmac
