// SPDX-License-Identifier: Apache-2.0
//
// CPU lists in the kernel's notation ("0-31,64-95"), to and from bit masks
// of 64 CPUs per word, as NVML's nvmlDeviceGetCpuAffinity fills them.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tarmac {

// Parses "0-3,8,10-11". kInvalidArgument for malformed text or CPUs >= 4096.
Result<std::vector<uint64_t>> ParseCpuList(std::string_view text);

// Formats a mask as the kernel does: ascending ranges, "" for none.
std::string FormatCpuList(const std::vector<uint64_t>& mask);

}  // namespace tarmac
