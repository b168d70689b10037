// SPDX-License-Identifier: Apache-2.0
//
// EventsWatcher waits for driver events (Xid errors) on a thread of its own,
// so an Xid is seen when the driver reports it and not at the next tick,
// and hands each event to a callback on that thread.
//
// A backend without events support is logged once and then left alone.
//
// Thread safety: construct and destroy from one thread; the callback runs
// on the watcher's thread.
#pragma once

#include <functional>
#include <thread>

#include "common/log.h"
#include "gpu/gpu_backend.h"

namespace tarmac::sampler {

class EventsWatcher {
 public:
  // `backend` must outlive the watcher.
  EventsWatcher(gpu::GpuBackend* backend, Logger* logger,
                std::function<void(const node::GpuEvent&)> on_event);
  // Stops the thread; waits at most one driver wait (kWaitSlice).
  ~EventsWatcher();
  EventsWatcher(const EventsWatcher&) = delete;
  EventsWatcher& operator=(const EventsWatcher&) = delete;

  static constexpr std::chrono::milliseconds kWaitSlice{250};

 private:
  void Run(std::stop_token stop);

  gpu::GpuBackend* backend_;
  Logger* logger_;
  std::function<void(const node::GpuEvent&)> on_event_;
  std::jthread thread_;
};

}  // namespace tarmac::sampler
