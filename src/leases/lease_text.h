// SPDX-License-Identifier: Apache-2.0
//
// How the lease service writes a lease in its events and messages: its
// GPUs ("GPU 0,1", or a MIG instance of one) and a time in RFC 3339.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "common/time_spec.h"
#include "sched/lease_book.h"

namespace tarmac::leases {

// GPU indices as listings write them: "0,1".
inline std::string GpuList(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

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

}  // namespace tarmac::leases
