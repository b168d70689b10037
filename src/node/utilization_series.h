// SPDX-License-Identifier: Apache-2.0
//
// One GPU's recent utilization readings as the agent's status gives them
// (`series_seconds`: utilization_gpu_series and
// utilization_gpu_series_seconds; docs/protocol.md): what `tarmac top`
// draws and `tarmac doctor` judges bursts by. Plain data.
#pragma once

#include <vector>

namespace tarmac::node {

struct UtilizationSeries {
  std::vector<double> values;  // 0..1, oldest first, one per tick.
  double span_seconds = 0;     // How long ago the oldest was read.
};

}  // namespace tarmac::node
