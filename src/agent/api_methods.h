// SPDX-License-Identifier: Apache-2.0
//
// Every method of the agent's local API in one table (ipc/method_table.h):
// `hello` and `status`, answered from the latest snapshot, then the lease
// service's. The agent's Unix server dispatches from it; a test checks its
// names against docs/protocol.md.
#pragma once

#include "agent/backfill_jobs.h"
#include "ipc/method_table.h"
#include "leases/lease_service.h"

namespace tarmac::agent {

// `snapshot_methods` answers hello and status (AnswerSnapshotMethod over the
// latest snapshot, agent/snapshot_methods.h). kInvalidArgument when a name would be in the table twice.
Status AddApiMethods(ipc::MethodTable* table, const ipc::MethodHandler& snapshot_methods,
                     leases::LeaseService* leases, BackfillJobs* backfill);

}  // namespace tarmac::agent
