// SPDX-License-Identifier: Apache-2.0
#include "cli/fleet_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "cli/status_command.h"
#include "ipc/unix_server.h"
#include "fleet/fleet_json.h"

namespace tarmac::cli {
namespace {

constexpr std::chrono::milliseconds kAgentTimeout{5000};
// How long a client keeps asking a busy or slow agent before giving up.
constexpr std::chrono::milliseconds kAgentPatience{15000};

// Asks the agent, retrying with backoff while it is busy or slow (up to
// kAgentPatience). kFailedPrecondition when no agent listens at `socket`;
// kDeadlineExceeded when one does but never answered.
Result<fleet::FleetView> ReadFromAgent(const std::string& socket, std::optional<std::chrono::seconds> recent_window) {
  ipc::Request request;
  request.method = "status";
  if (recent_window) {
    request.params["recent_window_seconds"] =
        std::min<int64_t>(recent_window->count(), ipc::kMaxRecentWindowSeconds);
  }
  auto deadline = std::chrono::steady_clock::now() + kAgentPatience;
  std::chrono::milliseconds backoff(5);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    Result<nlohmann::json> result = ipc::CallAgent(socket, request, std::clamp(left, std::chrono::milliseconds(1),
                                                                                kAgentTimeout));
    if (result.ok()) return fleet::FleetFromJson(result.value());
    if (result.status().code() != StatusCode::kUnavailable) return result.status();
    if (std::chrono::steady_clock::now() + backoff >= deadline) {
      return Status::DeadlineExceeded(
          fmt::format("the agent at {} did not answer within {} s ({})", socket,
                      std::chrono::duration_cast<std::chrono::seconds>(kAgentPatience).count(),
                      result.status().message()),
          "it runs but is stopped or overloaded; --no-agent reads the GPUs directly");
    }
    // Jittered, so that a crowd of clients does not come back in step.
    std::this_thread::sleep_for(backoff + std::chrono::milliseconds(std::rand() % (backoff.count() + 1)));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::milliseconds(250));
  }
}

}  // namespace

Result<std::unique_ptr<FleetSource>> FleetSource::Open(const GlobalOptions& global, Clock* clock, Logger* logger,
                                                       std::optional<std::chrono::seconds> recent_window) {
  std::unique_ptr<FleetSource> source(new FleetSource());
  source->socket_ = global.socket;
  // The GPUs are read directly only when no agent listens (or when asked):
  // an agent that is busy is waited for, never bypassed.
  if (!global.no_agent && !global.is_backend_explicit) {
    Result<fleet::FleetView> fleet = ReadFromAgent(global.socket, recent_window);
    if (fleet.ok()) {
      source->first_ = std::move(fleet).value();
      return source;
    }
    if (fleet.status().code() != StatusCode::kFailedPrecondition) return fleet.status();
  }
  Result<gpu::OpenedBackend> opened = OpenFromOptions(global, clock, logger);
  if (!opened.ok()) return opened.status();
  source->reader_.emplace(std::move(opened).value(), clock);
  return source;
}

Result<fleet::FleetView> FleetSource::Read(std::optional<std::chrono::seconds> recent_window) {
  if (reader_) return reader_->Read(recent_window);
  if (first_) {
    fleet::FleetView fleet = std::move(*first_);
    first_.reset();
    return fleet;
  }
  return ReadFromAgent(socket_, recent_window);
}

}  // namespace tarmac::cli
