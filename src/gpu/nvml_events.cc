// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend's driver events (Xid, double-bit ECC), for the events thread.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "gpu/nvml_backend.h"
#include "gpu/nvml_text.h"

namespace tarmac::gpu {

using nvml::Return;
using nvml_text::CString;

Result<std::vector<node::GpuEvent>> NvmlBackend::WaitEvents(std::chrono::milliseconds timeout) {
  std::vector<node::GpuEvent> events;
  if (!has_event_set_ || library_->api().EventSetWaitV2 == nullptr) {
    return Status::Unavailable("nvml: events are not supported by this driver");
  }
  unsigned wait_ms = static_cast<unsigned>(timeout.count());
  for (;;) {
    nvml::EventData data{};
    Return r = library_->api().EventSetWaitV2(event_set_, &data, wait_ms);
    if (r == nvml::kErrorTimeout) break;
    if (r != nvml::kSuccess) {
      if (events.empty()) {
        return Status::Unavailable(fmt::format("nvml: nvmlEventSetWait_v2: {}", library_->ErrorText(r)));
      }
      break;
    }
    node::GpuEvent e;
    e.gpu_index = -1;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle == data.device) e.gpu_index = static_cast<int>(i);
    }
    e.event_type = data.eventType;
    e.xid = static_cast<int64_t>(data.eventData);
    e.seen_at = clock_->WallNow();
    if (e.xid == 79 && e.gpu_index >= 0) fell_off_bus_[static_cast<size_t>(e.gpu_index)].store(true);
    events.push_back(e);
    wait_ms = 0;  // Drain what is queued without waiting again.
  }
  return events;
}

}  // namespace tarmac::gpu
