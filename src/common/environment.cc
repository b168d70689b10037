// SPDX-License-Identifier: Apache-2.0
#include "common/environment.h"

#include <algorithm>
#include <string_view>

extern char** environ;

namespace tarmac {

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  return env;
}

std::vector<std::string> EnvironmentWith(const EnvironmentChanges& set) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view v(*e);
    std::string_view name = v.substr(0, v.find('='));
    bool is_replaced = std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; });
    if (!is_replaced) env.emplace_back(v);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> EnvironmentPointers(std::vector<std::string>& strings) {
  std::vector<char*> envp;
  envp.reserve(strings.size() + 1);
  for (std::string& s : strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  return envp;
}

}  // namespace tarmac
