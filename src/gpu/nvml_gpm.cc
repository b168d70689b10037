// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend's engine activity through GPM (GPU Performance Monitoring,
// Hopper and newer): two samples per GPU used in turn, and the metrics of
// the interval between them (docs/nvml.md).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "gpu/nvml_backend.h"

namespace tarmac::gpu {

void NvmlBackend::ReadGpm(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  if (api.GpmQueryDeviceSupport == nullptr || api.GpmSampleAlloc == nullptr || api.GpmSampleGet == nullptr ||
      api.GpmMetricsGet == nullptr || !Supported(d, NvmlField::kGpm) || d.health != node::GpuHealth::kOk) {
    return;
  }
  if (d.gpm_samples[0] == nullptr) {
    nvml::GpmSupport support{nvml::kGpmSupportVersion, 0};
    if (!Check(d, index, NvmlField::kGpm, "nvmlGpmQueryDeviceSupport",
               api.GpmQueryDeviceSupport(d.handle, &support))) {
      return;
    }
    if (support.isSupportedDevice == 0) {
      logger_->Log(LogLevel::kInfo, "nvml: gpu {}: no GPM (before Hopper); profiling fields left empty",
                   index);
      d.unsupported[static_cast<size_t>(NvmlField::kGpm)] = true;
      return;
    }
    for (nvml::GpmSample& sample : d.gpm_samples) {
      if (!Check(d, index, NvmlField::kGpm, "nvmlGpmSampleAlloc", api.GpmSampleAlloc(&sample))) return;
    }
    d.has_gpm_previous = false;
  }
  GpmPair whole{d.gpm_samples, &d.gpm_next, &d.has_gpm_previous};
  Activity a;
  if (NextActivity(
          d, index, whole, [&](nvml::GpmSample x) { return api.GpmSampleGet(d.handle, x); }, &a)) {
    s->graphics_engine_active_ratio = a.graphics;
    s->tensor_active_ratio = a.tensor;
    s->dram_active_ratio = a.dram;
  }
  if (s->mig_instances.empty() || api.GpmMigSampleGet == nullptr) return;
  // Per MIG instance: a pair per GPU instance id, dropped with the instance.
  std::map<unsigned, DeviceState::MigGpm> kept;
  for (node::MigInstance& m : s->mig_instances) {
    unsigned id = static_cast<unsigned>(m.gpu_instance_id);
    DeviceState::MigGpm& pair = kept[id];
    if (auto it = d.mig_gpm.find(id); it != d.mig_gpm.end()) {
      pair = it->second;
      d.mig_gpm.erase(it);
    } else {
      bool allocated = true;
      for (nvml::GpmSample& sample : pair.samples) allocated &= api.GpmSampleAlloc(&sample) == nvml::kSuccess;
      if (!allocated) {
        for (nvml::GpmSample& sample : pair.samples) {
          if (sample != nullptr && api.GpmSampleFree != nullptr) api.GpmSampleFree(sample);
        }
        kept.erase(id);
        continue;
      }
    }
    GpmPair instance{pair.samples, &pair.next, &pair.has_previous};
    Activity ma;
    if (NextActivity(
            d, index, instance, [&](nvml::GpmSample x) { return api.GpmMigSampleGet(d.handle, id, x); },
            &ma)) {
      m.graphics_engine_active_ratio = ma.graphics;
      m.tensor_active_ratio = ma.tensor;
      m.dram_active_ratio = ma.dram;
    }
  }
  for (auto& [id, gone] : d.mig_gpm) {
    for (nvml::GpmSample& sample : gone.samples) {
      if (sample != nullptr && api.GpmSampleFree != nullptr) api.GpmSampleFree(sample);
    }
  }
  d.mig_gpm = std::move(kept);
}

void NvmlBackend::FreeGpmSamples(DeviceState& d) {
  const nvml::Api& api = library_->api();
  auto free = [&](nvml::GpmSample& sample) {
    if (sample != nullptr && api.GpmSampleFree != nullptr) api.GpmSampleFree(sample);
    sample = nullptr;
  };
  for (nvml::GpmSample& sample : d.gpm_samples) free(sample);
  for (auto& [id, pair] : d.mig_gpm) {
    for (nvml::GpmSample& sample : pair.samples) free(sample);
  }
  d.mig_gpm.clear();
}

bool NvmlBackend::NextActivity(DeviceState& d, int index, const GpmPair& pair,
                               const std::function<nvml::Return(nvml::GpmSample)>& take, Activity* out) {
  const nvml::Api& api = library_->api();
  nvml::GpmSample current = pair.samples[*pair.next];
  if (!Check(d, index, NvmlField::kGpm, "nvmlGpmSampleGet", take(current))) {
    *pair.has_previous = false;
    return false;
  }
  bool has = false;
  if (*pair.has_previous) {
    if (d.gpm_get == nullptr) d.gpm_get = std::make_shared<nvml::GpmMetricsGet>();
    nvml::GpmMetricsGet* get = d.gpm_get.get();  // Only the entries asked for are read and written.
    get->version = nvml::kGpmMetricsGetVersion;
    get->numMetrics = 3;
    get->sample1 = pair.samples[1 - *pair.next];
    get->sample2 = current;
    const unsigned ids[] = {nvml::kGpmMetricGraphicsUtil, nvml::kGpmMetricHmmaTensorUtil,
                            nvml::kGpmMetricDramBwUtil};
    for (int i = 0; i < 3; ++i) get->metrics[i] = nvml::GpmMetric{};
    for (int i = 0; i < 3; ++i) get->metrics[i].metricId = ids[i];
    if (Check(d, index, NvmlField::kGpm, "nvmlGpmMetricsGet", api.GpmMetricsGet(get))) {
      auto ratio = [](const nvml::GpmMetric& m) -> std::optional<double> {
        if (m.nvmlReturn != nvml::kSuccess || !(m.value >= 0)) return std::nullopt;  // Also NaN.
        return std::min(m.value / 100.0, 1.0);
      };
      out->graphics = ratio(get->metrics[0]);
      out->tensor = ratio(get->metrics[1]);
      out->dram = ratio(get->metrics[2]);
      has = true;
    }
  }
  *pair.has_previous = true;
  *pair.next = 1 - *pair.next;
  return has;
}

}  // namespace tarmac::gpu
