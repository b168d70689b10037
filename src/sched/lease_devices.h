// SPDX-License-Identifier: Apache-2.0
//
// Which processes and readings belong to a lease: every process on a
// whole-GPU lease's GPUs; only those in its instance for a MIG lease (the
// other instances of the GPU are other users' devices). Policies (idle,
// foreign, zombies) and figures go through here so none of them ever acts
// on another instance's process. Pure.
#pragma once

#include "node/node_view.h"
#include "sched/lease_book.h"

namespace tarmac::sched {

// The instance a MIG lease holds on `gpu`; null when it is not a MIG lease
// or the instance is gone from the GPU's layout.
const node::MigInstance* LeasedInstance(const Lease& lease, const node::GpuView& gpu);

// Whether `process` on `gpu` runs on a device of `lease`.
bool RunsInLease(const Lease& lease, const node::GpuView& gpu, const node::ProcessView& process);

// Whether the MIG instance `lease` holds is gone from its GPU's layout as
// last read in full (has_mig_instances); false while the layout is unknown.
bool IsLeasedInstanceGone(const Lease& lease, const node::NodeView& node_view);

}  // namespace tarmac::sched
