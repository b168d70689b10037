// SPDX-License-Identifier: Apache-2.0
//
// The MIG profiles of the GPU models that have MIG, as NVIDIA's MIG user
// guide lists them: each profile's compute slices (of 7), memory slices (of
// 8) and how many instances of it one GPU can hold. What a reading cannot
// tell (which layouts fit a GPU, which profiles a lease may ask for). Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac::nvidia {

struct MigProfile {
  std::string_view name;   // "1g.10gb"
  int compute_slices = 0;  // Of 7.
  int memory_slices = 0;   // Of 8.
  int max_count = 0;       // Instances of it one GPU can hold.
};

inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;

// The profiles of a GPU of `model` (NVML's name) with `memory_total_bytes`,
// smallest first; empty for a model without MIG (or not known here). Known:
// A100 40GB and 80GB, A30, H100 80GB and 94GB, H200 141GB.
std::vector<MigProfile> MigProfilesFor(std::string_view model, int64_t memory_total_bytes);

// Whether `name` looks like a MIG profile ("1g.10gb", "3g.40gb"), known or not.
bool IsMigProfileName(std::string_view name);

// Compute slices of a profile named like "3g.40gb" (3); 0 when malformed.
int MigComputeSlicesOf(std::string_view name);

// Empty when instances of `profiles` (in order) fit together on one GPU of
// `model`: each profile known, no more of each than max_count, compute
// slices summing to at most 7 and memory slices to at most 8. Otherwise the
// first reason they do not, naming the profile.
std::string CheckMigLayout(std::string_view model, int64_t memory_total_bytes,
                           const std::vector<std::string>& profiles);

}  // namespace tarmac::nvidia
