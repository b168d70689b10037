// SPDX-License-Identifier: Apache-2.0
//
// A scenario's MIG layouts: a list of profile names ("3g.40gb", "1g.10gb",
// ...) made into the instances a GPU holds, checked against the model's
// real profiles (nvidia/mig_profiles.h). Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "sim/scenario.h"

namespace tarmac::sim {

// The instances `layout` makes on `gpu` (its model, memory and UUID):
// GPU instance ids from 1 in layout order (7g alone gets 0, as the driver
// gives), compute instance 0, memory by memory slices, and MIG UUIDs
// derived from the GPU's UUID, `generation` (0 for the spec's layout, n for
// the n-th reconfiguration) and the id, so a new layout has new UUIDs.
// Empty string on success; otherwise why the layout cannot be on the GPU.
std::string MakeMigInstances(const GpuSpec& gpu, const std::vector<std::string>& layout, int64_t generation,
                             std::vector<MigInstanceSpec>* instances);

// One instance of `profile` on `gpu` with GPU instance id `gpu_instance_id`
// (compute instance 0), its UUID derived as above. False when the model has
// no such profile.
bool MakeMigInstance(const GpuSpec& gpu, const std::string& profile, int gpu_instance_id, int64_t generation,
                     MigInstanceSpec* instance);

// Where each instance of `layout` on `gpu` starts, in memory slices (of 8):
// its memory_start where set, else where it fits (nvidia::PlaceMigInstances).
// Empty when they do not fit together.
std::vector<int> MigMemoryStarts(const GpuSpec& gpu, const std::vector<MigInstanceSpec>& layout);

}  // namespace tarmac::sim
