// SPDX-License-Identifier: Apache-2.0
//
// The one-screen text view of `tarmac status`: per GPU its utilization,
// memory, power against limit, temperature, SM clock and what matters
// (idle, lost, throttling and why, a degraded PCIe link), and under it the
// processes with PID, user, GPU memory, SM % and command. Readings a GPU
// cannot give show as "-". Pure function.
#pragma once

#include <string>

#include "node/node_view.h"

namespace tarmac::cli {

struct RenderOptions {
  bool use_color = false;  // ANSI colours (on a terminal).
  // Every line fits this many columns (the terminal's, else 100): the
  // model without its "NVIDIA " prefix, throttle reasons in short words,
  // notes that do not fit counted ("+2 more"), commands cut. 0 (--wide):
  // everything in full.
  int width = 100;
  bool is_from_agent = false;  // Say that the readings come from the agent.
  // --watch: recent utilization beside the instant. (PCIe throughput is
  // shown whenever the view has its rate: from the second read on.)
  bool is_watch = false;
};

std::string RenderStatus(const node::NodeView& node_view, const RenderOptions& options);

}  // namespace tarmac::cli
