// SPDX-License-Identifier: Apache-2.0
#include "sim/mig_layout.h"

#include <fmt/format.h>

#include <functional>

#include "nvidia/mig_profiles.h"

namespace tarmac::sim {

std::string MakeMigInstances(const GpuSpec& gpu, const std::vector<std::string>& layout, int generation,
                             std::vector<MigInstanceSpec>* instances) {
  instances->clear();
  if (std::string bad = nvidia::CheckMigLayout(gpu.model, gpu.memory_total_bytes, layout); !bad.empty()) return bad;
  std::vector<nvidia::MigProfile> profiles = nvidia::MigProfilesFor(gpu.model, gpu.memory_total_bytes);
  int next_id = 1;
  for (const std::string& name : layout) {
    const nvidia::MigProfile* p = nullptr;
    for (const nvidia::MigProfile& k : profiles) {
      if (k.name == name) p = &k;
    }
    MigInstanceSpec m;
    m.profile = name;
    m.compute_slices = p->compute_slices;
    m.gpu_instance_id = p->compute_slices == nvidia::kMigComputeSlices ? 0 : next_id++;
    m.compute_instance_id = 0;
    // Whole MiB, as the driver reports instance memory.
    m.memory_total_bytes = gpu.memory_total_bytes / nvidia::kMigMemorySlices * p->memory_slices / (1 << 20) * (1 << 20);
    uint64_t a = std::hash<std::string>{}(fmt::format("{}/{}/{}", gpu.uuid, generation, m.gpu_instance_id));
    uint64_t b = std::hash<std::string>{}(fmt::format("{}:{}", a, gpu.uuid));
    m.uuid = fmt::format("MIG-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                         b & 0xffffffffffffULL);
    instances->push_back(std::move(m));
  }
  return {};
}

}  // namespace tarmac::sim
