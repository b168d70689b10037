// SPDX-License-Identifier: Apache-2.0
//
// The lease methods of the agent's local API (docs/protocol.md): one table
// (LeaseMethods) that the agent serves from, each method a function of the
// lease state and one call. LeaseService (lease_service.h) locks, resolves
// the caller, answers through the table and, for a change, saves or takes
// it back; the functions here only answer.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "common/status.h"
#include "ipc/protocol.h"
#include "leases/lease_core.h"

namespace tarmac::leases {

// One call of a method: its params, who asks, and when.
struct ApiCall {
  const nlohmann::json& params;
  const ipc::PeerCredentials& peer;
  const sched::Caller& caller;
  sched::TimePoint now;
};
using ApiAnswer = Result<nlohmann::json> (*)(LeaseCore& core, const ApiCall& call);

struct LeaseMethod {
  const char* name;
  bool is_change;  // Answered only once saved; taken back when it cannot be.
  ApiAnswer answer;
  bool may_defer = false;  // May answer later (lease.wait).
};
// lease.request, lease.get, lease.wait, lease.attach, lease.release,
// lease.extend, leases, queue, events, zombies, zombies.kill,
// backfill.gpus, slurm.prolog, slurm.epilog, gpu.drain, gpu.undrain
// (gpu_drains.h).
const std::vector<LeaseMethod>& LeaseMethods();

// lease_api.cc
Result<nlohmann::json> OnRequest(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnGet(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnAttach(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnRelease(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnExtend(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnLeases(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnQueue(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnEvents(LeaseCore& core, const ApiCall& c);
// lease_zombies.cc
Result<nlohmann::json> OnZombies(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnZombiesKill(LeaseCore& core, const ApiCall& c);
// lease_backfill.cc: each GPU (and MIG instance) as backfill's gate saw it
// at the last tick.
Result<nlohmann::json> OnBackfillGpus(LeaseCore& core, const ApiCall& c);
// slurm_jobs.cc (docs/slurm.md): the prolog records the job's GPUs as a
// lease of kind "slurm" owned by the job's user; the epilog ends it and
// terminates what the job's user left on those GPUs (verified, audited),
// and answers the job's use.
Result<nlohmann::json> OnSlurmProlog(LeaseCore& core, const ApiCall& c);
Result<nlohmann::json> OnSlurmEpilog(LeaseCore& core, const ApiCall& c);

}  // namespace tarmac::leases
