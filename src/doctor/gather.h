// SPDX-License-Identifier: Apache-2.0
//
// Gathering the doctor's inputs that are not the GPUs' readings, shared by
// `tarmac doctor` and the agent's scheduled run: the host's side (memory,
// the kernel log's Xids and the uptime, the PCI bus, each GPU process's
// facts, the container runtime) and throttling from the history.
#pragma once

#include <cstdint>
#include <map>

#include "doctor/host_files.h"
#include "doctor/inputs.h"
#include "store/sqlite_db.h"

namespace tarmac::doctor {

struct GatherOptions {
  bool wants_kernel_log = true;
  bool wants_containers = true;
};

// Fills in->memory, kernel_xids (or kernel_log_error), uptime_seconds,
// pci_gpus, processes (for the GPU processes of in->fleet) and containers.
void GatherHost(const HostFiles& host, const GatherOptions& options, DoctorInputs* in);

// Throttling per GPU index over the last hour, from the history's minute
// rollups ("the last hour"); empty when the history has none.
std::map<int, ThrottleWindow> ThrottleFromHistory(store::Db* db, int64_t now_unix);
// DoctorInputs::mig_empty_seconds from the history in `db`.
std::map<std::string, int64_t> MigEmptyFromHistory(store::Db* db, int64_t now_unix);

}  // namespace tarmac::doctor
