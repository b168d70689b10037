// SPDX-License-Identifier: Apache-2.0
//
// `tarmac fleet idle`: where GPUs are idle or held idle right now, the list
// a lab lead sends round on Monday. Each row is a GPU of a node that is up,
// idle (under 5 % utilization) or held idle (a process holds memory on it
// at 0 % SM), with how long the spell has lasted (as its agent counts it:
// since the agent started at most), what it has cost so far at the agent's
// price, and who holds it. Sorted by cost, then by how long, then node and
// index. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"

namespace tarmac::fleet {

struct IdleRow {
  const FleetNode* node = nullptr;
  const FleetGpu* gpu = nullptr;
};

std::vector<IdleRow> IdleNow(const FleetView& view);

// "5 GPUs idle now (2 held idle), 12.5 GPU-hours so far, USD 41.20".
std::string IdleSummary(const std::vector<IdleRow>& rows);

std::string RenderIdleText(const FleetView& view, size_t width);
nlohmann::json IdleToJson(const FleetView& view);

}  // namespace tarmac::fleet
