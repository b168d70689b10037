// SPDX-License-Identifier: Apache-2.0
//
// `tarmac top`'s screen, drawn from the data and the UI state into a
// Screen: a header, the GPU panel (a line per GPU with bars for
// utilization and memory, power and temperature, a graph of the recent
// utilization, holder and time left, health marks; MIG instances under
// their GPU), the process panel (a sortable, filterable table or tree), the
// leases and queue when there is room, the latest event, and the keys.
// Under 120 columns the compact layout (it fits 80x24); from 120, the full
// one (host memory, whole commands, a longer graph). Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "top/screen.h"
#include "top/top_model.h"

namespace tarmac::top {

// Where things landed, for the keys and the mouse.
struct Layout {
  int process_header_row = -1;
  int process_first_row = -1;
  int process_rows = 0;                          // Rows the panel has on screen.
  int scroll = 0;                                // The first process row shown.
  std::vector<int64_t> shown_pids;               // Top to bottom.
  std::vector<std::pair<int, SortKey>> columns;  // Start column of each header.
  int total_rows = 0;                            // Rows the filter and tree give.
};

Layout RenderTop(const TopData& data, const TopUi& ui, Screen* screen);

// "12.0G", "512M", "0": a byte count in four or five columns.
std::string ShortBytes(double bytes);
// "52m", "3h", "2d": a duration in at most three columns and a unit.
std::string ShortDuration(double seconds);

}  // namespace tarmac::top
