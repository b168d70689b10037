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

// What a CUDA program sees: whole GPUs and MIG instances.
struct CudaDevices {
  std::vector<int> gpus;               // Physical indices, in CUDA's order (parents of MIG instances too).
  std::vector<std::string> mig_uuids;  // The MIG instances among them.
};

// The devices this process sees, as CUDA reads CUDA_VISIBLE_DEVICES:
// indices and GPU UUIDs name whole GPUs, MIG UUIDs MIG instances; a GPU
// in MIG mode is never usable whole (only its instances are); unset means
// every GPU not in MIG mode and every MIG instance. An error when it sees
// none.
Result<CudaDevices> VisibleDevices(World& world);

// OK when the driver is loaded and each device of `devices` is there and
// has `bytes` free (a MIG instance: in the instance).
Status CheckMemoryFits(const WorldState& state, const CudaDevices& devices, int64_t bytes);

// argv joined with spaces: a load's command, for messages.
std::string CommandLineOf(int argc, char** argv);

}  // namespace tarmac::sim
