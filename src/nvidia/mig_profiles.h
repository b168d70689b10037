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

// The memory slices (of 8) where an instance of `p` may start, as the MIG
// user guide's placement tables give them: at a multiple of its memory
// slices, within the eight, its compute slices within the seven (1g.10gb at
// 0-6, 1g.20gb at 0, 2, 4, 6, 2g at 0, 2, 4, 3g at 0 and 4, 4g and 7g at 0).
// On the known boards every layout CheckMigLayout accepts has an
// arrangement of these.
std::vector<int> MigPlacementStarts(const MigProfile& p);

// Where instances of `layout` (in order) sit: `fixed[i]` where it is >= 0,
// and for the others the first assignment, trying lower starts first, in
// which no two instances share a memory slice. Empty when there is none.
std::vector<int> PlaceMigInstances(const std::vector<MigProfile>& layout, const std::vector<int>& fixed);

// Empty when instances of `profiles` (in order) fit together on one GPU of
// `model`: each profile known, no more of each than max_count, compute
// slices summing to at most 7 and memory slices to at most 8. Otherwise the
// first reason they do not, naming the profile.
std::string CheckMigLayout(std::string_view model, int64_t memory_total_bytes,
                           const std::vector<std::string>& profiles);

}  // namespace tarmac::nvidia
