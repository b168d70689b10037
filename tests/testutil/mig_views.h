// SPDX-License-Identifier: Apache-2.0
//
// MIG instances and the processes in them as the sampler reads them, for
// tests of what tarmac makes of a GPU in MIG mode.
#pragma once

#include <cstdlib>
#include <string>

#include "node/node_view.h"

namespace tarmac::testing {

// GPU instance `gi` of `profile` ("1g.10gb": its memory from the name),
// "MIG-<gi>" unless named, `used_gib` of it used, its engine `active`.
inline node::MigInstance MigView(int gi, const std::string& profile, double active = 0, int64_t used_gib = 0,
                                 std::string uuid = "") {
  node::MigInstance m;
  m.uuid = uuid.empty() ? "MIG-" + std::to_string(gi) : std::move(uuid);
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.profile = profile;
  m.memory_total_bytes = std::atoll(profile.substr(profile.find('.') + 1).c_str()) << 30;
  m.memory_used_bytes = used_gib << 30;
  m.graphics_engine_active_ratio = active;
  return m;
}

// A process holding `used_gib` in GPU instance `gi` (no SM figure: NVML
// gives none under MIG).
inline node::ProcessView InMig(int64_t pid, int gi, int64_t used_gib = 1) {
  node::ProcessView p;
  p.process.pid = pid;
  p.process.used_memory_bytes = used_gib << 30;
  p.process.gpu_instance_id = gi;
  p.process.compute_instance_id = 0;
  p.details.pid = pid;
  p.details.exists = true;
  p.details.user = "alice";
  return p;
}

// A scenario: GPU 0 an H100 split into a 3g.40gb and two 1g.10gb
// instances, GPU 1 a whole H100.
inline constexpr const char* kSplitAndWholeH100 = R"(
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
mig_layout = ["3g.40gb", "1g.10gb", "1g.10gb"]
[[gpu]]
model = "NVIDIA H100 80GB HBM3"
)";

}  // namespace tarmac::testing
