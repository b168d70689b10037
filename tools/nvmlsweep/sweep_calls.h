// SPDX-License-Identifier: Apache-2.0
//
// The generic part of the sweep: every function of the call table
// (calls.h) called on every handle its first argument names, with every
// value of its enumerated arguments, each answer recorded as a "call" line.
// A list call is made by the size protocol: the count query first
// (recorded as NAME#size), then the list; a size answer that breaks the
// protocol is also recorded as a "check size-protocol" line.
#pragma once

#include "library.h"
#include "world.h"

namespace tarmac::nvmlsweep {

struct SweepOptions {
  bool settings = false;  // Also call the !set functions.
};

// Sweeps every function of the table `lib` exports (a missing one is a
// "missing NAME" line). `event_set` is the sweep's own event set.
void SweepCalls(Library& lib, const SweptWorld& world, void* event_set, const SweepOptions& options);

}  // namespace tarmac::nvmlsweep
