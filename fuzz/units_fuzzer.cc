// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: sizes, durations, CPU lists and simload's load files.
#include <cstdint>
#include <string_view>

#include "common/cpu_list.h"
#include "common/units.h"
#include "sim/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::Result<int64_t> bytes = tarmac::ParseBytes(text);
  if (bytes.ok() && bytes.value() < 0) __builtin_trap();
  tarmac::Result<std::chrono::milliseconds> d = tarmac::ParseDuration(text);
  if (d.ok() && d.value().count() < 0) __builtin_trap();
  tarmac::Result<std::vector<uint64_t>> cpus = tarmac::ParseCpuList(text);
  if (cpus.ok()) {
    // Formatting and parsing again is the identity on masks.
    tarmac::Result<std::vector<uint64_t>> again = tarmac::ParseCpuList(tarmac::FormatCpuList(cpus.value()));
    if (!again.ok()) __builtin_trap();
  }
  tarmac::Result<tarmac::sim::Load> load = tarmac::sim::DecodeLoad(text, "fuzz");
  if (load.ok() && (load.value().pid <= 0 || load.value().memory_bytes < 0)) __builtin_trap();
  return 0;
}
