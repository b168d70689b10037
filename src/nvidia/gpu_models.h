// SPDX-License-Identifier: Apache-2.0
//
// Facts about GPU models that a reading cannot tell: how many NVLink links
// a board of that model has. Pure; thread-safe.
#pragma once

#include <string_view>

namespace tarmac::nvidia {

// NVLink links a GPU of `model` (NVML's name) has: 18 on an H100 or H200
// SXM, 12 on an A100 SXM; 0 when the model's count is not known here
// (PCIe boards, whose bridges vary, and older models).
int ExpectedNvlinkLinks(std::string_view model);

}  // namespace tarmac::nvidia
