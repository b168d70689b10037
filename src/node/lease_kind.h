// SPDX-License-Identifier: Apache-2.0
//
// What a lease is, by who handed it out and how it ends: one vocabulary for
// the lease JSON of the API and the saved state (`kind`), the marks status
// shows on a GPU, listings and events. A MIG instance is a device, not a
// kind: a lease of any kind may hold one. Constant data; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tarmac::node {

enum class LeaseKind {
  kRun,          // `tarmac run`: ends with its client (or release, max-time).
  kReservation,  // `tarmac reserve`: outlives its client until released or its end.
  kBackfill,     // Preemptible, on idle GPUs only (run or reserve --priority backfill).
  kPod,          // The kubelet allocated it to a pod; the kubelet ends it.
  kSlurm,        // A Slurm job's GPUs from its prolog to its epilog.
};

// "run", "reservation", "backfill", "pod", "slurm".
std::string_view LeaseKindName(LeaseKind kind);
// The kind a name says; empty for any other text.
std::optional<LeaseKind> ParseLeaseKind(std::string_view name);
// Every name, for messages ("run, reservation, backfill, pod or slurm").
std::string LeaseKindNames();

// Whether another scheduler (the kubelet, Slurm) decides when it ends.
inline bool IsExternal(LeaseKind kind) { return kind == LeaseKind::kPod || kind == LeaseKind::kSlurm; }

}  // namespace tarmac::node
