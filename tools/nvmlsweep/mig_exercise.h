// SPDX-License-Identifier: Apache-2.0
//
// MIG management through NVML's documented pattern, on every MIG-enabled
// GPU with room: a profile's info by its constant, its `info.id` to the
// remaining capacity and the possible placements (size query first), a
// GPU instance created at a free placement and without one, the compute
// instance asked of it, then both destroyed. Each call is a "call" line;
// that the instance counts, the MIG devices and the capacity follow is a
// "check mig-create" / "check mig-destroy" line. A caller that is not
// root is refused and nothing changes.
#pragma once

#include "library.h"
#include "world.h"

namespace tarmac::nvmlsweep {

void ExerciseMig(Library& lib, const SweptWorld& world);

}  // namespace tarmac::nvmlsweep
