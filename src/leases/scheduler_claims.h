// SPDX-License-Identifier: Apache-2.0
//
// Other schedulers' claims on this node's devices, and the Slurm commands
// the idle policy runs: what the lease service keeps for the kubelet and
// Slurm beside its own leases.
//
//  - A claim ("Slurm job 42", "a pod (the kubelet's Allocate of ...)") is
//    made when another scheduler hands out a device a backfill lease holds:
//    the backfill lease is revoked (backfill_claims.cc), and until the
//    claim asks again and finds the devices free, or until it expires, no
//    grant takes them (MarkClaimed marks them as held outside tarmac).
//  - A Slurm action (scontrol notify, scontrol requeue, scancel) is queued
//    under the service's lock during a tick and run after it, without the
//    lock (TakeSlurmActions, then the command set by SetSlurmCommand).
//
// Thread safety: none; the lease service uses it under its lock.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "leases/lease_policy.h"
#include "sched/lease_book.h"
#include "sched/placement.h"

namespace tarmac::leases {

class SchedulerClaims {
 public:
  using TimePoint = sched::TimePoint;
  // Another scheduler's claim, waiting for backfill to give way.
  struct Claim {
    std::vector<std::string> uuids;
    TimePoint expires_at;
    std::string waiting_for;  // What it waits for, as its caller is told.
  };
  // A Slurm command the idle policy runs after the tick.
  struct SlurmAction {
    int64_t lease_id = 0;
    int64_t uid = -1;
    std::string user;
    std::vector<int> gpus;
    std::string job;
    SlurmIdleAction action = SlurmIdleAction::kWarn;
    std::string why;
    std::vector<std::string> argv;
  };
  using Command = std::function<Status(const std::vector<std::string>& argv)>;

  // Records (or renews) `claim` on `uuids`: a new claim expires at
  // `expires_at`, a renewed one keeps its first expiry.
  void Hold(const std::string& claim, const std::vector<std::string>& uuids, TimePoint expires_at,
            std::string waiting_for);
  // The claim's devices are free: it is dropped.
  void Drop(const std::string& claim) { claims_.erase(claim); }
  // The claim named `claim`; null when none.
  const Claim* Find(const std::string& claim) const;
  // Drops the claims past their time and marks every device a claim names
  // (and its GPU and MIG instances) as having foreign processes in `slots`.
  void MarkClaimed(TimePoint now, std::vector<sched::GpuSlot>* slots);
  size_t size() const { return claims_.size(); }

  void QueueSlurmAction(SlurmAction action) { slurm_actions_.push_back(std::move(action)); }
  // The queued actions, emptied.
  std::vector<SlurmAction> TakeSlurmActions();
  // How Slurm's commands are run (argv, no shell); unset: they fail, and
  // the lease service says so.
  void SetSlurmCommand(Command run) { slurm_command_ = std::move(run); }
  const Command& slurm_command() const { return slurm_command_; }

 private:
  std::map<std::string, Claim> claims_;  // By claim ("Slurm job 42").
  std::vector<SlurmAction> slurm_actions_;
  Command slurm_command_;
};

}  // namespace tarmac::leases
