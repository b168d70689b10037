// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: scenario files. Any input must parse or give one error
// naming the source; never crash.
#include <cstdint>
#include <string_view>

#include "sim/scenario_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::Result<tarmac::sim::Scenario> s = tarmac::sim::ParseScenario(text, "fuzz.toml");
  if (!s.ok() && s.status().message().rfind("fuzz.toml", 0) != 0) __builtin_trap();
  return 0;
}
