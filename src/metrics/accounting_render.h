// SPDX-License-Identifier: Apache-2.0
//
// The series of the agent's counters (metrics/counters.h): idle and
// held-idle time and what it cost, and the seconds fleet accounting sums
// with increase() (docs/fleet.md): by GPU state, by lease holder, by pod and
// Slurm job. Pure; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "metrics/counters.h"
#include "metrics/exposition.h"
#include "metrics/render.h"
#include "node/node_view.h"

namespace tarmac::metrics {

// The families CollectAccounting renders (documented in NativeFamilies()).
const std::vector<FamilyDoc>& AccountingFamilies();

// Each GPU of `node_view` that `counters` has, with tarmac's GPU labels; the
// cost families carry `currency`.
void CollectAccounting(const node::NodeView& node_view, const std::string& host, const std::string& currency,
                       const std::map<std::string, GpuCounters>& counters, Exposition* out);

}  // namespace tarmac::metrics
