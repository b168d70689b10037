// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the agent's TOML config (config/config.h). Whatever the
// text, parsing returns a Config within its documented ranges or an error.
#include <cstdint>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::Result<tarmac::config::Config> c = tarmac::config::ParseConfig(text, "fuzz.toml");
  if (c.ok()) {
    const tarmac::config::Config& v = c.value();
    if (v.sampler.fast_interval.count() < 100 || v.sampler.slow_interval < v.sampler.fast_interval)
      __builtin_trap();
    if (v.leases.zombies.min_memory_bytes < 0 || v.leases.zombies.idle_for.count() < 1000) __builtin_trap();
    if (v.api.max_connections < 1 || v.api.max_request_bytes < 1024) __builtin_trap();
  } else if (c.status().message().empty()) {
    __builtin_trap();  // Every refusal says why.
  }
  return 0;
}
