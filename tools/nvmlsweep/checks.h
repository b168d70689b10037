// SPDX-License-Identifier: Apache-2.0
//
// The answers that report one fact twice, compared: memory v1 with v2,
// field values with the direct calls, clocks with the P-state and the
// clock event reasons, violation time with the reasons, MIG devices with
// the GPU instances and with their own UUIDs, the process list versions
// with each other. Each comparison is a line "check NAME HANDLE TAGS
// ok|disagree DETAIL"; a device that answers neither side is skipped.
#pragma once

#include "library.h"
#include "world.h"

namespace tarmac::nvmlsweep {

void CheckAgreement(Library& lib, const SweptWorld& world);

}  // namespace tarmac::nvmlsweep
