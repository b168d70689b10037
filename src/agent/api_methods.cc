// SPDX-License-Identifier: Apache-2.0
#include "agent/api_methods.h"

namespace tarmac::agent {

Status AddApiMethods(ipc::MethodTable* table, const ipc::MethodHandler& snapshot_methods,
                     leases::LeaseService* leases, BackfillJobs* backfill) {
  for (const char* name : {"hello", "status"}) {
    Status s = table->Add(name, snapshot_methods);
    if (!s.ok()) return s;
  }
  Status s = leases->AddMethods(table);
  if (!s.ok()) return s;
  return backfill->AddMethods(table);
}

}  // namespace tarmac::agent
