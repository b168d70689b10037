// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the saved drain record (leases/gpu_drains.h), as the
// lease service reads it back from its state file at start. Whatever the
// bytes: Corruption that says why, or drains that write back and read
// again the same.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "leases/gpu_drains.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tarmac;  // NOLINT: fuzz target.
  nlohmann::json j =
      nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  std::map<std::string, node::GpuDrain> drains;
  std::map<std::string, int64_t> cleared;
  Status s = leases::DrainsFromJson(j, &drains, &cleared);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();
    return 0;
  }
  std::map<std::string, node::GpuDrain> again;
  std::map<std::string, int64_t> cleared_again;
  if (!leases::DrainsFromJson(leases::DrainsToJson(drains, cleared), &again, &cleared_again).ok() ||
      again != drains || cleared_again != cleared)
    __builtin_trap();
  return 0;
}
