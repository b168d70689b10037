// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: CUDA_VISIBLE_DEVICES. Results are always valid, unique
// physical indices.
#include <cstdint>
#include <set>
#include <string_view>

#include "sim/visible_devices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> kUuids = {"GPU-aaaa1111", "GPU-aaaa2222", "GPU-bbbb3333",
                                                  "MIG-cccc4444"};
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<int> devices = tarmac::sim::ParseCudaVisibleDevices(text, kUuids);
  std::set<int> seen;
  for (int d : devices) {
    if (d < 0 || d >= static_cast<int>(kUuids.size()) || !seen.insert(d).second) __builtin_trap();
  }
  return 0;
}
