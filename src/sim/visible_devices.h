// SPDX-License-Identifier: Apache-2.0
//
// CUDA_VISIBLE_DEVICES as the CUDA runtime reads it, so tarmac-simload uses
// exactly the GPUs a real CUDA program would:
// - unset: every GPU;
// - a comma-separated list of indices ("0,2") or UUIDs ("GPU-8f2c...",
//   a unique prefix is enough; the "GPU-" prefix may be left out);
// - parsing stops at the first entry that names no GPU: that entry and all
//   after it are ignored ("0,2,-1,1" gives 0 and 2; "-1" or "" gives none);
// - a GPU named twice makes the whole list invalid (no GPUs).
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac::sim {

// Returns the indices into `uuids`, in the order CUDA numbers them (entry
// order). `value` empty optional means the variable is unset. Numbers name
// only the first `numbered` devices (the whole GPUs, when `uuids` has MIG
// instances after them); UUIDs name any.
std::vector<int> ParseCudaVisibleDevices(std::optional<std::string_view> value,
                                         const std::vector<std::string>& uuids,
                                         size_t numbered = static_cast<size_t>(-1));

}  // namespace tarmac::sim
