// SPDX-License-Identifier: Apache-2.0
#include "prom/labels.h"

#include <algorithm>

namespace tarmac::prom {

std::vector<Labels::value_type>::const_iterator Labels::Lower(const std::string& name) const {
  return std::lower_bound(items_.begin(), items_.end(), name,
                          [](const value_type& item, const std::string& n) { return item.first < n; });
}

Labels::Labels(std::initializer_list<value_type> items) {
  for (const value_type& item : items) Set(item.first, item.second);
}

void Labels::Set(std::string name, std::string value) {
  if (items_.empty() || items_.back().first < name) {
    items_.emplace_back(std::move(name), std::move(value));
    return;
  }
  auto it = items_.begin() + (Lower(name) - items_.cbegin());
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    items_.emplace(it, std::move(name), std::move(value));
  }
}

const std::string* Labels::Find(const std::string& name) const {
  auto it = Lower(name);
  return it != items_.end() && it->first == name ? &it->second : nullptr;
}

}  // namespace tarmac::prom
