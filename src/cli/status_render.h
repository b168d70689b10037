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
  // notes that do not fit on the GPU's line under it, commands cut; under
  // 100 columns the columns are narrower, so 80 fit every reading. 0
  // (--wide): everything in full.
  int width = 100;
  // Every screen fits this many lines (--watch on a terminal: its rows); 0:
  // no limit. When the GPUs and their processes need more, each GPU's
  // processes are counted on its line instead of listed; when that is still
  // too tall, the screen ends with how many lines are left out.
  int height = 0;
  bool is_from_agent = false;  // Say that the readings come from the agent.
  // --watch: recent utilization beside the instant. (PCIe throughput is
  // shown whenever the view has its rate: from the second read on.)
  bool is_watch = false;
};

std::string RenderStatus(const node::NodeView& node_view, const RenderOptions& options);

}  // namespace tarmac::cli
