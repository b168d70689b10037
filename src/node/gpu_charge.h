// SPDX-License-Identifier: Apache-2.0
//
// Whom a GPU's time is charged to, and how it was spent: the one rule the
// agent's counters (tarmac_gpu_user_seconds_total, read by `tarmac fleet
// report --by user`) and the history (`tarmac report --by user`) both
// charge by, so that the two reports give the same numbers for one node.
//
// - A lease holds the GPU (run, reserve, backfill, a Slurm job): all its
//   time goes to the lease's user, held by "lease", whether or not a
//   process runs on it.
// - Else compute processes hold it: its time is split evenly among their
//   users, held by "process".
// - Else nobody holds it: nobody is charged (the GPU's idle time is the
//   owner's, in the per-GPU report).
// The state is the GPU's at the time: busy (at or above the idle line),
// idle (under it: node::kIdleUtilizationRatio) or unknown (not readable).
// Under MIG each instance is charged apart, by the same rules, for its
// share of the GPU (its memory's share of the GPU's; equal shares when the
// sizes are unknown).
//
// Pure functions; thread-safe. The one-argument ChargeGpu reads the
// view's own lease marks (node/lease_marks.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "node/node_view.h"

namespace tarmac::node {

enum class ChargeHolder { kLease = 0, kProcess = 1 };
enum class ChargeState { kBusy = 0, kIdle = 1, kUnknown = 2 };

// "lease", "process"; "busy", "idle", "unknown": the labels and stored names.
const char* ChargeHolderName(ChargeHolder holder);
const char* ChargeStateName(ChargeState state);

struct GpuCharge {
  std::string user;
  ChargeHolder held_by = ChargeHolder::kLease;
  ChargeState state = ChargeState::kBusy;
  double share = 1;  // Of the GPU's time, 0..1.
};

// Who is charged for `gpu`'s time now; empty when nobody holds it. The
// shares of one user, holder and state are summed into one charge.
std::vector<GpuCharge> ChargeGpu(const GpuView& gpu);
// The same with the leases given apart (the GPU's own, null for none; its
// instances' by MIG UUID, other GPUs' instances allowed): for a view not
// marked with its leases, without copying it.
std::vector<GpuCharge> ChargeGpu(const GpuView& gpu, const GpuLease* lease,
                                 const std::map<std::string, GpuLease>& mig_leases);

}  // namespace tarmac::node
