// SPDX-License-Identifier: Apache-2.0
//
// Small helpers shared by the lease service's two halves: the API
// (lease_service.cc) and what it enforces each tick (lease_enforcement.cc).
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "common/random_id.h"
#include "common/time_spec.h"
#include "node/node_view.h"
#include "sched/lease_book.h"

namespace tarmac::leases::lease_helpers {

// The agent acting on its own policy (may end any lease).
inline const sched::Caller kAgentCaller{0, "tarmac", true};

inline std::string GpuList(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

// A lease's token: 128 random bits as hex.
inline std::string NewToken() { return RandomHex128(); }

// RFC 3339 for Unix seconds, as events say when a lease ends.
inline std::string UtcText(double unix_seconds) {
  return FormatRfc3339(
      std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(unix_seconds))));
}

// What a lease holds, for messages: "GPU 0,1", or "MIG instance MIG-...
// (1g.10gb) of GPU 0".
inline std::string DeviceList(const sched::Lease& lease) {
  if (sched::IsMigLease(lease)) {
    return fmt::format("MIG instance {} ({}) of GPU {}", lease.uuids[0], lease.mig_profile,
                       GpuList(lease.gpus));
  }
  return "GPU " + GpuList(lease.gpus);
}

inline bool IsCompute(const node::ProcessView& p) { return p.process.type != node::ProcessType::kGraphics; }

}  // namespace tarmac::leases::lease_helpers
