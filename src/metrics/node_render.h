// SPDX-License-Identifier: Apache-2.0
//
// The node's own series: its GPUs counted by what holds of them now, and
// their mean utilization (docs/metrics.md). Each count is what the per-GPU
// families of the same sample say, summed, so that a fleet store answers a
// node's counts with a few series rather than every GPU's: `tarmac fleet
// status --by node` reads them (docs/fleet.md). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/render.h"
#include "node/lease_marks.h"
#include "node/node_view.h"

namespace tarmac::metrics {

// Whether `g` could be read at its sample: its readings, marks and holders
// are rendered only then (a lost GPU's go stale).
bool Readable(const node::GpuView& g);

// What tarmac_gpu_idle says of `g`: 1, 0, or nothing (absent) when the GPU
// cannot be read or its utilization is unknown.
std::optional<double> IdleMarkValue(const node::GpuView& g);
// What tarmac_gpu_held_idle says of `g`: 1, 0, or nothing when unreadable.
std::optional<double> HeldIdleMarkValue(const node::GpuView& g);

// The families CollectNodeCounts and RenderNodeLeased render (documented in
// NativeFamilies()).
const std::vector<FamilyDoc>& NodeFamilies();

// tarmac_node_gpus (by `which`: all, idle, held_idle, lost, degraded,
// drain), tarmac_node_idle_holders and tarmac_node_utilization_ratio, with
// `host` as their hostname label.
void CollectNodeCounts(const node::NodeView& node_view, const std::string& host, Exposition* out);

// tarmac_node_gpus_leased: the GPUs of `node_view` a lease holds now (a GPU
// whose MIG instances leases hold counts once), 0 when none; rendered per
// scrape with the lease marks (RenderLeaseMarks).
std::string RenderNodeLeased(const node::LeaseMarks& marks, const node::NodeView& node_view,
                             const std::string& host);

}  // namespace tarmac::metrics
