// SPDX-License-Identifier: Apache-2.0
//
// `tarmac fleet status` as text (every line within `width` columns) and as
// JSON (docs/fleet.md: base units; a reading a node did not report is
// absent). Pure.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "fleet/fleet_view.h"

namespace tarmac::fleet {

// Who holds a GPU, in a few words: "lease 7 (alice)", "job 4242 (bob)",
// "lease 9 (carol) backfill", "+2" for more; "-" for nobody.
std::string HolderText(const FleetGpu& g);

// The model without its "NVIDIA " prefix.
std::string ShortModel(const std::string& model);

std::string RenderFleetText(const FleetView& view, size_t width);

nlohmann::json FleetToJson(const FleetView& view);
// FleetToJson(view).dump(2) and a newline, written to `out` node by node:
// a fleet of ten thousand nodes is never one document in memory.
void WriteFleetJson(const FleetView& view, std::FILE* out);

// `tarmac fleet status --by node`: a line a node, its GPUs counted
// (CountsOf): GPUs, idle, held idle, leased, mean utilization, and notes
// (LOST, DRAIN, degraded, idle holders; DOWN since when).
std::string RenderNodesText(const FleetView& view, size_t width);
// The same as JSON: FleetToJson's head, and per node its counts in place
// of its GPUs (down nodes: their GPUs only).
nlohmann::json NodesToJson(const FleetView& view);

}  // namespace tarmac::fleet
