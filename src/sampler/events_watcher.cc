// SPDX-License-Identifier: Apache-2.0
#include "sampler/events_watcher.h"

namespace tarmac::sampler {

EventsWatcher::EventsWatcher(gpu::GpuBackend* backend, Logger* logger,
                             std::function<void(const node::GpuEvent&)> on_event)
    : backend_(backend), logger_(logger), on_event_(std::move(on_event)) {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

EventsWatcher::~EventsWatcher() {
  thread_.request_stop();
  thread_.join();
}

void EventsWatcher::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    Result<std::vector<node::GpuEvent>> events = backend_->WaitEvents(kWaitSlice);
    if (!events.ok()) {
      // Not supported, or the driver went away: the sampler notices the
      // latter on its own and re-attaches with a new watcher.
      logger_->Log(LogLevel::kInfo, "events: {}; Xid errors will not be reported", events.status().message());
      return;
    }
    for (const node::GpuEvent& e : events.value()) on_event_(e);
  }
}

}  // namespace tarmac::sampler
