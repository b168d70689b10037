// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): events.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/cpu_list.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
}  // namespace

NVML_EXPORT Return nvmlEventSetCreate(nvmlEventSet_st** set) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (set == nullptr) return kErrorInvalidArgument;
  auto* s = new nvmlEventSet_st();
  s->mask_by_gpu.assign(w->scenario().gpus.size(), 0);
  s->seen_until = w->Now();
  Fake().Remember(s);
  *set = s;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetSupportedEventTypes(nvmlDevice_st* device, unsigned long long* types) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (types == nullptr) return kErrorInvalidArgument;
  *types = kEventXidCriticalError | 0x4 /* PState */;
  if (d.spec->has_ecc) *types |= kEventSingleBitEccError | kEventDoubleBitEccError;
  if (d.spec->is_mig_enabled) *types |= kEventMigConfigChange;  // MIG-capable GPUs in MIG mode.
  return kSuccess;
}

// Registers all of `types` or, if any is unsupported, none of them.
NVML_EXPORT Return nvmlDeviceRegisterEvents(nvmlDevice_st* device, unsigned long long types,
                                            nvmlEventSet_st* set) {
  unsigned long long supported = 0;
  Return r = nvmlDeviceGetSupportedEventTypes(device, &supported);
  if (r != kSuccess) return r;
  if (!Fake().IsLive(set)) return kErrorInvalidArgument;
  if ((types & ~supported) != 0) return kErrorNotSupported;
  set->mask_by_gpu[static_cast<size_t>(device->index)] |= types;
  return kSuccess;
}

NVML_EXPORT Return nvmlEventSetWait_v2(nvmlEventSet_st* set, EventData* data, unsigned timeout_ms) {
  if (!Fake().IsLive(set) || data == nullptr) return kErrorInvalidArgument;
  Clock* clock = RealClock();
  auto deadline = clock->SteadyNow() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    sim::World* w = Fake().world();
    if (w == nullptr) return kErrorUninitialized;
    std::chrono::system_clock::time_point now = w->Now();
    for (const sim::WorldEvent& e : sim::EventsBetween(w->scenario(), w->epoch(), set->seen_until, now)) {
      if (e.gpu >= 0 && static_cast<size_t>(e.gpu) < set->mask_by_gpu.size() &&
          (set->mask_by_gpu[static_cast<size_t>(e.gpu)] & e.event_type) != 0) {
        set->pending.push_back(e);
      }
    }
    if (now > set->seen_until) set->seen_until = now;
    if (!set->pending.empty()) {
      sim::WorldEvent e = set->pending.front();
      set->pending.pop_front();
      data->device = Fake().Handle(e.gpu);
      data->eventType = e.event_type;
      data->eventData = static_cast<unsigned long long>(e.xid);
      data->gpuInstanceId = kValueNotAvailableUint;
      data->computeInstanceId = kValueNotAvailableUint;
      return kSuccess;
    }
    // Block until the timeline's next event or the deadline, as the driver
    // blocks in the kernel (no polling: a waiting client costs nothing);
    // a frozen world never reaches an event, so it waits out the deadline.
    auto step = deadline;
    std::vector<sim::WorldEvent> next =
        sim::EventsBetween(w->scenario(), w->epoch(), now, now + std::chrono::hours(24 * 365));
    if (!next.empty() && !w->is_frozen()) {
      auto until_event =
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(next.front().at - now);
      step = std::min(step, clock->SteadyNow() + until_event + std::chrono::milliseconds(1));
    }
    if (clock->SteadyNow() >= deadline) return kErrorTimeout;
    clock->SleepUntil(step, std::stop_token());
  }
}

NVML_EXPORT Return nvmlEventSetWait(nvmlEventSet_st* set, EventData* data, unsigned timeout_ms) {
  return nvmlEventSetWait_v2(set, data, timeout_ms);
}

NVML_EXPORT Return nvmlEventSetFree(nvmlEventSet_st* set) {
  if (!Fake().Forget(set)) return kErrorInvalidArgument;
  delete set;
  return kSuccess;
}
