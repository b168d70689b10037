// SPDX-License-Identifier: Apache-2.0
#include "leases/request_memory.h"

#include <algorithm>

namespace tarmac::leases {

void RequestMemory::RememberKey(int64_t uid, const std::string& key, int64_t id) {
  if (key.empty()) return;
  constexpr size_t kMaxKeys = 2 * kMaxEnded;
  if (keys_.size() >= kMaxKeys && keys_.count({uid, key}) == 0) {
    auto oldest = std::min_element(keys_.begin(), keys_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
    keys_.erase(oldest);
  }
  keys_[{uid, key}] = id;
}

std::optional<int64_t> RequestMemory::FindKey(int64_t uid, const std::string& key) const {
  if (key.empty()) return std::nullopt;
  auto it = keys_.find({uid, key});
  if (it == keys_.end()) return std::nullopt;
  return it->second;
}

void RequestMemory::RememberEnded(int64_t id, std::string why, std::string kind) {
  if (ended_.size() >= kMaxEnded && ended_.count(id) == 0) ended_.erase(ended_.begin());
  ended_[id] = Ended{std::move(kind), std::move(why)};
}

const RequestMemory::Ended* RequestMemory::FindEnded(int64_t id) const {
  auto it = ended_.find(id);
  return it == ended_.end() ? nullptr : &it->second;
}

}  // namespace tarmac::leases
