// SPDX-License-Identifier: Apache-2.0
//
// What creating a CUDA context checks, on the simulated world, for the
// programs that stand in for CUDA ones (tarmac-simload, tarmac-simengine):
// which GPUs the process sees (CUDA_VISIBLE_DEVICES, as the runtime reads
// it), and whether memory can be had on them now. Errors are worded as
// CUDA's own.
// Thread-safe (reads the environment and the world's state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "sim/world.h"

namespace tarmac::sim {

// The physical GPU indices this process sees, in CUDA's order; an error
// when it sees none.
Result<std::vector<int>> VisibleGpus(const World& world);

// OK when the driver is loaded and each of `gpus` is there and has
// `bytes` free.
Status CheckMemoryFits(const WorldState& state, const std::vector<int>& gpus, int64_t bytes);

// argv joined with spaces: a load's command, for messages.
std::string CommandLineOf(int argc, char** argv);

}  // namespace tarmac::sim
