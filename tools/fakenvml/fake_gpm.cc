// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): GPM (Hopper and newer; not in the legacy build).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/cpu_list.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
}  // namespace

#ifndef TARMAC_FAKE_LEGACY

NVML_EXPORT Return nvmlGpmQueryDeviceSupport(nvmlDevice_st* device, GpmSupport* support) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (support == nullptr) return kErrorInvalidArgument;
  if (support->version != kGpmSupportVersion) return kErrorArgumentVersionMismatch;
  support->isSupportedDevice = Unsupported(d, "gpm") ? 0 : 1;
  return kSuccess;
}

NVML_EXPORT Return nvmlGpmSampleAlloc(nvmlGpmSample_st** sample) {
  if (Fake().world() == nullptr) return kErrorUninitialized;
  if (sample == nullptr) return kErrorInvalidArgument;
  *sample = new nvmlGpmSample_st();
  Fake().Remember(*sample);
  return kSuccess;
}

NVML_EXPORT Return nvmlGpmSampleFree(nvmlGpmSample_st* sample) {
  if (!Fake().Forget(sample)) return kErrorInvalidArgument;
  delete sample;
  return kSuccess;
}

NVML_EXPORT Return nvmlGpmSampleGet(nvmlDevice_st* device, nvmlGpmSample_st* sample) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!Fake().IsLive(sample)) return kErrorInvalidArgument;
  if (Unsupported(d, "gpm")) return kErrorNotSupported;
  sample->index = d.index;
  sample->gpu_instance_id = -1;
  sample->taken_at = d.state->evaluated_at;
  return kSuccess;
}

// One MIG GPU instance's counters (by its GPU instance id).
NVML_EXPORT Return nvmlGpmMigSampleGet(nvmlDevice_st* device, unsigned gpu_instance_id,
                                       nvmlGpmSample_st* sample) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!Fake().IsLive(sample)) return kErrorInvalidArgument;
  if (Unsupported(d, "gpm") || !d.spec->is_mig_enabled) return kErrorNotSupported;
  bool found = false;
  for (const sim::MigInstanceState& m : d.g->mig_instances)
    found |= m.spec->gpu_instance_id == static_cast<int>(gpu_instance_id);
  if (!found) return kErrorNotFound;
  sample->index = d.index;
  sample->gpu_instance_id = static_cast<int>(gpu_instance_id);
  sample->taken_at = d.state->evaluated_at;
  return kSuccess;
}

// Percent over the interval between the two samples, as the driver's GPM
// metrics are; unknown metric ids get NOT_SUPPORTED in their own slot.
NVML_EXPORT Return nvmlGpmMetricsGet(GpmMetricsGet* get) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (get == nullptr) return kErrorInvalidArgument;
  if (get->version != kGpmMetricsGetVersion) return kErrorArgumentVersionMismatch;
  if (get->numMetrics > kGpmMetricMax || !Fake().IsLive(get->sample1) || !Fake().IsLive(get->sample2)) {
    return kErrorInvalidArgument;
  }
  const nvmlGpmSample_st& a = *get->sample1;
  const nvmlGpmSample_st& b = *get->sample2;
  if (a.index < 0 || a.index != b.index || a.gpu_instance_id != b.gpu_instance_id ||
      b.taken_at <= a.taken_at) {
    return kErrorInvalidArgument;
  }
  sim::EngineActivity mean = w->MeanEngineActivity(a.index, a.taken_at, b.taken_at, a.gpu_instance_id);
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    GpmMetric& m = get->metrics[i];
    m.nvmlReturn = kSuccess;
    switch (m.metricId) {
      case kGpmMetricGraphicsUtil:
        m.value = mean.graphics * 100;
        break;
      case kGpmMetricAnyTensorUtil:
      case kGpmMetricHmmaTensorUtil:
        m.value = mean.tensor * 100;
        break;
      case kGpmMetricDramBwUtil:
        m.value = mean.dram * 100;
        break;
      default:
        m.nvmlReturn = kErrorNotSupported;
        m.value = 0;
        break;
    }
  }
  return kSuccess;
}

#endif  // TARMAC_FAKE_LEGACY
