// SPDX-License-Identifier: Apache-2.0
//
// Helpers the NvmlBackend's files share. Internal to src/gpu.
#pragma once

#include <cstring>
#include <string>

namespace tarmac::gpu::nvml_text {

// A C string from a fixed buffer that may lack its terminator.
inline std::string CString(const char* buf, size_t size) { return std::string(buf, strnlen(buf, size)); }

}  // namespace tarmac::gpu::nvml_text
