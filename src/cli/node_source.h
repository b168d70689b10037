// SPDX-License-Identifier: Apache-2.0
//
// Where a read command gets its NodeView: from the agent's latest snapshot
// when an agent serves the socket (fresh, and cheap: no NVML calls), or by
// reading the GPUs directly. An explicit --backend (or --no-agent) means
// "directly".
#pragma once

#include <memory>
#include <optional>

#include "cli/options.h"
#include "common/clock.h"
#include "sampler/node_reader.h"

namespace tarmac::cli {

class NodeSource {
 public:
  // Connects to the agent or opens the backend. Errors are the backend's
  // (a missing driver is kUnavailable), or the agent's. `recent_window`
  // asks the agent, in the first read, for each GPU's mean utilization over
  // that window (from its own samples; at most ten minutes).
  static Result<std::unique_ptr<NodeSource>> Open(
      const GlobalOptions& global, Clock* clock, Logger* logger,
      std::optional<std::chrono::seconds> recent_window = std::nullopt);

  Result<node::NodeView> Read(std::optional<std::chrono::seconds> recent_window);
  bool is_agent() const { return !reader_.has_value(); }

  // For readers that show no process: a direct read then skips the /proc
  // details of GPU processes (the agent's snapshot has them anyway).
  void LeaveProcessesUnattributed() {
    if (reader_) reader_->LeaveProcessesUnattributed();
  }

 private:
  NodeSource() = default;
  std::optional<sampler::NodeReader> reader_;
  std::string socket_;
  std::optional<node::NodeView> first_;  // The agent's answer taken while opening.
};

}  // namespace tarmac::cli
