// SPDX-License-Identifier: Apache-2.0
#include "sim/mig_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "nvidia/mig_profiles.h"

namespace tarmac::sim {

bool MakeMigInstance(const GpuSpec& gpu, const std::string& profile, int gpu_instance_id, int64_t generation,
                     MigInstanceSpec* instance) {
  const nvidia::MigProfile* p = nullptr;
  std::vector<nvidia::MigProfile> profiles = nvidia::MigProfilesFor(gpu.model, gpu.memory_total_bytes);
  for (const nvidia::MigProfile& k : profiles) {
    if (k.name == profile) p = &k;
  }
  if (p == nullptr) return false;
  MigInstanceSpec m;
  m.profile = profile;
  m.compute_slices = p->compute_slices;
  m.gpu_instance_id = gpu_instance_id;
  m.compute_instance_id = 0;
  m.generation = generation;
  // Whole MiB, as the driver reports instance memory.
  m.memory_total_bytes =
      gpu.memory_total_bytes / nvidia::kMigMemorySlices * p->memory_slices / (1 << 20) * (1 << 20);
  uint64_t a = std::hash<std::string>{}(fmt::format("{}/{}/{}", gpu.uuid, generation, m.gpu_instance_id));
  uint64_t b = std::hash<std::string>{}(fmt::format("{}:{}", a, gpu.uuid));
  m.uuid = fmt::format("MIG-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                       b >> 48, b & 0xffffffffffffULL);
  *instance = std::move(m);
  return true;
}

std::string MakeMigInstances(const GpuSpec& gpu, const std::vector<std::string>& layout, int64_t generation,
                             std::vector<MigInstanceSpec>* instances) {
  instances->clear();
  if (std::string bad = nvidia::CheckMigLayout(gpu.model, gpu.memory_total_bytes, layout); !bad.empty())
    return bad;
  int next_id = 1;
  for (const std::string& name : layout) {
    MigInstanceSpec m;
    MakeMigInstance(gpu, name, 0, generation, &m);  // Checked above: the profile exists.
    m.gpu_instance_id = m.compute_slices == nvidia::kMigComputeSlices ? 0 : next_id++;
    MakeMigInstance(gpu, name, m.gpu_instance_id, generation, &m);
    instances->push_back(std::move(m));
  }
  return {};
}

std::vector<int> MigMemoryStarts(const GpuSpec& gpu, const std::vector<MigInstanceSpec>& layout) {
  std::vector<nvidia::MigProfile> known = nvidia::MigProfilesFor(gpu.model, gpu.memory_total_bytes);
  std::vector<nvidia::MigProfile> profiles;
  std::vector<int> fixed;
  for (const MigInstanceSpec& m : layout) {
    auto it = std::find_if(known.begin(), known.end(),
                           [&](const nvidia::MigProfile& p) { return p.name == m.profile; });
    if (it == known.end()) return {};
    profiles.push_back(*it);
    fixed.push_back(m.memory_start);
  }
  return nvidia::PlaceMigInstances(profiles, fixed);
}

}  // namespace tarmac::sim
