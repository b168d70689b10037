// SPDX-License-Identifier: Apache-2.0
#include "cli/fleet_source.h"

#include "cli/status_command.h"
#include "ipc/unix_server.h"
#include "sampler/status_json.h"

namespace tarmac::cli {
namespace {

constexpr std::chrono::milliseconds kAgentTimeout{5000};

Result<FleetView> ReadFromAgent(const std::string& socket, std::optional<std::chrono::seconds> recent_window) {
  ipc::Request request;
  request.method = "status";
  if (recent_window) {
    request.params["recent_window_seconds"] =
        std::min<int64_t>(recent_window->count(), ipc::kMaxRecentWindowSeconds);
  }
  Result<nlohmann::json> result = ipc::CallAgent(socket, request, kAgentTimeout);
  if (!result.ok()) return result.status();
  return sampler::FleetFromJson(result.value());
}

}  // namespace

Result<std::unique_ptr<FleetSource>> FleetSource::Open(const GlobalOptions& global, Clock* clock, Logger* logger,
                                                       std::optional<std::chrono::seconds> recent_window) {
  std::unique_ptr<FleetSource> source(new FleetSource());
  source->socket_ = global.socket;
  if (!global.no_agent && !global.is_backend_explicit) {
    Result<FleetView> fleet = ReadFromAgent(global.socket, recent_window);
    if (fleet.ok()) {
      source->first_ = std::move(fleet).value();
      return source;
    }
  }
  Result<gpu::OpenedBackend> opened = OpenFromOptions(global, clock, logger);
  if (!opened.ok()) return opened.status();
  source->reader_.emplace(std::move(opened).value(), clock);
  return source;
}

Result<FleetView> FleetSource::Read(std::optional<std::chrono::seconds> recent_window) {
  if (reader_) return reader_->Read(recent_window);
  if (first_) {
    FleetView fleet = std::move(*first_);
    first_.reset();
    return fleet;
  }
  return ReadFromAgent(socket_, recent_window);
}

}  // namespace tarmac::cli
