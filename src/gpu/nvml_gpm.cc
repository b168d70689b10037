// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend's engine activity through GPM (GPU Performance Monitoring,
// Hopper and newer): two samples per GPU used in turn, and the metrics of
// the interval between them (docs/nvml.md).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "gpu/nvml_backend.h"

namespace tarmac::gpu {

void NvmlBackend::ReadGpm(DeviceState& d, int index, fleet::GpuSample* s) {
  const nvml::Api& api = library_->api();
  if (api.GpmQueryDeviceSupport == nullptr || api.GpmSampleAlloc == nullptr || api.GpmSampleGet == nullptr ||
      api.GpmMetricsGet == nullptr || !Supported(d, NvmlField::kGpm) || d.health != fleet::GpuHealth::kOk) {
    return;
  }
  if (d.gpm_samples[0] == nullptr) {
    nvml::GpmSupport support{nvml::kGpmSupportVersion, 0};
    if (!Check(d, index, NvmlField::kGpm, "nvmlGpmQueryDeviceSupport",
               api.GpmQueryDeviceSupport(d.handle, &support))) {
      return;
    }
    if (support.isSupportedDevice == 0) {
      logger_->Log(LogLevel::kInfo, "nvml: gpu {}: no GPM (before Hopper); profiling fields left empty", index);
      d.unsupported[static_cast<size_t>(NvmlField::kGpm)] = true;
      return;
    }
    for (nvml::GpmSample& sample : d.gpm_samples) {
      if (!Check(d, index, NvmlField::kGpm, "nvmlGpmSampleAlloc", api.GpmSampleAlloc(&sample))) return;
    }
    d.has_gpm_previous = false;
  }
  nvml::GpmSample current = d.gpm_samples[d.gpm_next];
  if (!Check(d, index, NvmlField::kGpm, "nvmlGpmSampleGet", api.GpmSampleGet(d.handle, current))) {
    d.has_gpm_previous = false;
    return;
  }
  if (d.has_gpm_previous) {
    auto get = std::make_unique<nvml::GpmMetricsGet>();  // 3.9 KiB: not on a worker's stack.
    get->version = nvml::kGpmMetricsGetVersion;
    get->numMetrics = 3;
    get->sample1 = d.gpm_samples[1 - d.gpm_next];
    get->sample2 = current;
    get->metrics[0].metricId = nvml::kGpmMetricGraphicsUtil;
    get->metrics[1].metricId = nvml::kGpmMetricHmmaTensorUtil;
    get->metrics[2].metricId = nvml::kGpmMetricDramBwUtil;
    if (Check(d, index, NvmlField::kGpm, "nvmlGpmMetricsGet", api.GpmMetricsGet(get.get()))) {
      auto ratio = [](const nvml::GpmMetric& m) -> std::optional<double> {
        if (m.nvmlReturn != nvml::kSuccess || !(m.value >= 0)) return std::nullopt;  // Also NaN.
        return std::min(m.value / 100.0, 1.0);
      };
      s->graphics_engine_active_ratio = ratio(get->metrics[0]);
      s->tensor_active_ratio = ratio(get->metrics[1]);
      s->dram_active_ratio = ratio(get->metrics[2]);
    }
  }
  d.has_gpm_previous = true;
  d.gpm_next = 1 - d.gpm_next;
}

}  // namespace tarmac::gpu
