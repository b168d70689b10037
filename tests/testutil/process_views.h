// SPDX-License-Identifier: Apache-2.0
//
// A GPU process as the sampler sees it (process and /proc details), for
// tests of what the agent judges from snapshots.
#pragma once

#include <cstdint>
#include <string>

#include "node/node_view.h"

namespace tarmac::testing {

inline node::ProcessView Process(int64_t pid, int64_t memory, double sm, int64_t uid = 1001,
                                 const char* name = "python", int64_t parent = 4000, int64_t start = 100) {
  node::ProcessView p;
  p.process.pid = pid;
  p.process.used_memory_bytes = memory;
  p.process.sm_utilization_ratio = sm;
  p.details.pid = pid;
  p.details.exists = true;
  p.details.uid = uid;
  p.details.user = uid == 0 ? "root" : "alice";
  p.details.name = name;
  p.details.command = std::string(name) + " notebook.py";
  p.details.parent_pid = parent;
  p.details.start_ticks = start;
  return p;
}

}  // namespace tarmac::testing
