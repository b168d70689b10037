// SPDX-License-Identifier: Apache-2.0
#include "agent/api_methods.h"

namespace tarmac::agent {

Status AddApiMethods(ipc::MethodTable* table, const ipc::MethodHandler& snapshot_methods, leases::LeaseService* leases) {
  for (const char* name : {"hello", "status"}) {
    Status s = table->Add(name, ipc::Access::kAnyone, snapshot_methods);
    if (!s.ok()) return s;
  }
  return leases->AddMethods(table);
}

}  // namespace tarmac::agent
