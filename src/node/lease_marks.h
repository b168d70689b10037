// SPDX-License-Identifier: Apache-2.0
//
// Who holds each GPU, as the lease service last published it, and the one
// place that joins it onto a reading: every view that shows leases (socket
// and HTTP status, the history, the doctor) marks its copy of the node view
// with ApplyLeaseMarks, so none of them can show a GPU unmarked. Value
// types and a pure function; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "node/node_view.h"

namespace tarmac::node {

struct LeaseMarks {
  std::map<int, GpuLease> leases;              // Whole GPUs, by index.
  std::map<std::string, GpuLease> mig_leases;  // MIG instances, by MIG UUID.
  std::map<int, int64_t> preemptions;          // Backfill preemptions so far, by GPU index.
  std::map<std::string, GpuDrain> drains;      // Drained GPUs, by GPU UUID.

  bool empty() const { return leases.empty() && mig_leases.empty() && preemptions.empty() && drains.empty(); }
};

// Sets each GPU's lease, its instances' leases, its backfill preemptions
// and its drain
// from `marks`; what `marks` does not name is left unmarked.
void ApplyLeaseMarks(const LeaseMarks& marks, NodeView* node_view);
// The same for one GPU.
void ApplyLeaseMarks(const LeaseMarks& marks, GpuView* gpu);

}  // namespace tarmac::node
