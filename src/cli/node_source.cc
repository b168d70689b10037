// SPDX-License-Identifier: Apache-2.0
#include "cli/node_source.h"

#include "cli/status_command.h"
#include "client/agent_client.h"

namespace tarmac::cli {

Result<std::unique_ptr<NodeSource>> NodeSource::Open(const GlobalOptions& global, Clock* clock,
                                                     Logger* logger,
                                                     std::optional<std::chrono::seconds> recent_window) {
  std::unique_ptr<NodeSource> source(new NodeSource());
  source->socket_ = global.socket;
  // The GPUs are read directly only when no agent listens (or when asked):
  // an agent that is busy is waited for, never bypassed.
  if (!global.no_agent && !global.is_backend_explicit) {
    Result<node::NodeView> node_view = client::AgentClient(global.socket).FetchStatus(recent_window);
    if (node_view.ok()) {
      source->first_ = std::move(node_view).value();
      return source;
    }
    if (node_view.status().code() != StatusCode::kFailedPrecondition) return node_view.status();
  }
  Result<gpu::OpenedBackend> opened = OpenFromOptions(global, clock, logger);
  if (!opened.ok()) return opened.status();
  source->reader_.emplace(std::move(opened).value(), clock);
  return source;
}

Result<node::NodeView> NodeSource::Read(std::optional<std::chrono::seconds> recent_window) {
  if (reader_) return reader_->Read(recent_window);
  if (first_) {
    node::NodeView node_view = std::move(*first_);
    first_.reset();
    return node_view;
  }
  return client::AgentClient(socket_).FetchStatus(recent_window);
}

}  // namespace tarmac::cli
