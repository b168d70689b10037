// SPDX-License-Identifier: Apache-2.0
//
// Which MIG instance a request for one gets. A GPU in MIG mode is never
// leased whole; its instances are, one per lease, each like a small GPU:
// free when healthy, in no lease and running no process outside a lease.
// Among the free instances of the profile asked for, placement packs: it
// takes one on the GPU whose instances are most in use already, so GPUs
// with every instance free stay that way for later requests; ties go to the
// lower GPU index, then the lower instance. Layouts are the operator's
// (nvidia-smi mig); placement never creates or destroys instances. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sched/placement.h"

namespace tarmac::sched {

struct MigPick {
  int gpu = 0;       // The parent GPU's index.
  std::string uuid;  // The instance's MIG UUID.
  std::string profile;
};

// OK when `wants` (WantsMig) names something that exists: a profile some
// instance on this machine has, or an instance's MIG UUID. Otherwise
// kInvalidArgument saying what the machine has.
Status CheckMigWants(const GpuWants& wants, const std::vector<GpuSlot>& gpus);

// The instance for `wants`, or empty when none is free now. `gpus` as
// MarkLeased leaves them (instances in leases marked). For backfill
// (`is_backfill`), only instances that accept backfill.
std::optional<MigPick> PickMigInstance(const std::vector<GpuSlot>& gpus, const GpuWants& wants,
                                       bool is_backfill = false);

// The instance with `uuid` and its GPU; null when none.
const MigSlot* FindMigSlot(const std::vector<GpuSlot>& gpus, const std::string& uuid, int* gpu = nullptr);

}  // namespace tarmac::sched
