// SPDX-License-Identifier: Apache-2.0
//
// NvmlBackend's readings: the fast tier each tick, the slow tier less often,
// and recent utilization from the driver's own sample buffer.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "gpu/nvml_backend.h"
#include "gpu/nvml_text.h"

namespace tarmac::gpu {

using nvml::Return;
using nvml_text::CString;

namespace {

// A value of type `type` (nvmlValueType_t) as a number; empty for a type
// NVML does not define.
std::optional<double> NumberOf(const nvml::Value& value, int type) {
  switch (type) {
    case nvml::kValueTypeDouble:
      return value.dVal;
    case nvml::kValueTypeUnsignedInt:
      return value.uiVal;
    case nvml::kValueTypeUnsignedLong:
      return static_cast<double>(value.ulVal);
    case nvml::kValueTypeUnsignedLongLong:
      return static_cast<double>(value.ullVal);
    case nvml::kValueTypeSignedLongLong:
      return static_cast<double>(value.sllVal);
    case nvml::kValueTypeSignedInt:
      return value.siVal;
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<node::GpuSample> NvmlBackend::Sample(int index, unsigned tiers) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    return Status::InvalidArgument(fmt::format("nvml: no gpu {}", index));
  }
  DeviceState& d = devices_[static_cast<size_t>(index)];
  node::GpuSample s;
  s.index = index;
  s.taken_at = clock_->WallNow();
  if (fell_off_bus_[static_cast<size_t>(index)].load() && d.health == node::GpuHealth::kOk) {
    d.health = node::GpuHealth::kLost;
    d.error = fmt::format("nvml: gpu {}: Xid 79: GPU has fallen off the bus", index);
  }
  if (d.health == node::GpuHealth::kNoPermission || d.handle == nullptr) {
    s.health = d.health;
    s.error = d.error;
    return s;
  }
  if (d.health != node::GpuHealth::kOk) {  // Lost or driver gone: stays so until re-opened.
    s.health = d.health;
    s.error = d.error;
    return s;
  }
  if (tiers & node::kFastTier) ReadFast(d, index, &s);
  if ((tiers & node::kSlowTier) && d.health == node::GpuHealth::kOk) ReadSlow(d, index, &s);
  if (d.health != node::GpuHealth::kOk) {
    // The device went away mid-sample: report the state, not half readings.
    node::GpuSample lost;
    lost.index = index;
    lost.taken_at = s.taken_at;
    lost.health = d.health;
    lost.error = d.error;
    return lost;
  }
  return s;
}

void NvmlBackend::ReadFast(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  auto ok = [&](auto... call) { return Read(d, index, call...); };

  nvml::Utilization utilization{};
  if (ok(NvmlField::kUtilization, "nvmlDeviceGetUtilizationRates", api.DeviceGetUtilizationRates,
         &utilization)) {
    s->utilization_gpu_ratio = utilization.gpu / 100.0;
    s->utilization_memory_ratio = utilization.memory / 100.0;
  }

  ReadMemory(d, index, s);

  unsigned value = 0;
  if (ok(NvmlField::kPower, "nvmlDeviceGetPowerUsage", api.DeviceGetPowerUsage, &value)) {
    s->power_milliwatts = value;
  }
  if (ok(NvmlField::kPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", api.DeviceGetEnforcedPowerLimit,
         &value)) {
    s->power_limit_milliwatts = value;
  }
  unsigned long long energy = 0;
  if (ok(NvmlField::kEnergy, "nvmlDeviceGetTotalEnergyConsumption", api.DeviceGetTotalEnergyConsumption,
         &energy)) {
    s->energy_millijoules = static_cast<int64_t>(energy);
  }

  ReadTemperature(d, index, s);

  if (ok(NvmlField::kSmClock, "nvmlDeviceGetClockInfo", api.DeviceGetClockInfo, nvml::kClockSm, &value)) {
    s->sm_clock_hertz = int64_t{value} * 1000000;
  }
  if (ok(NvmlField::kMemoryClock, "nvmlDeviceGetClockInfo", api.DeviceGetClockInfo, nvml::kClockMem,
         &value)) {
    s->memory_clock_hertz = int64_t{value} * 1000000;
  }

  unsigned long long reasons = 0;
  if (api.DeviceGetCurrentClocksEventReasons != nullptr) {
    if (ok(NvmlField::kClockEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",
           api.DeviceGetCurrentClocksEventReasons, &reasons)) {
      s->clock_event_reasons = reasons;
    }
  } else if (ok(NvmlField::kThrottleReasons, "nvmlDeviceGetCurrentClocksThrottleReasons",
                api.DeviceGetCurrentClocksThrottleReasons, &reasons)) {
    s->clock_event_reasons = reasons;
  }

  int pstate = 0;
  if (ok(NvmlField::kPerformanceState, "nvmlDeviceGetPerformanceState", api.DeviceGetPerformanceState,
         &pstate) &&
      pstate != nvml::kPstateUnknown) {
    s->performance_state = pstate;
  }
  // Video engines (NOT_SUPPORTED on MIG-enabled GPUs and boards without them).
  unsigned period_us = 0;
  if (ok(NvmlField::kEncoder, "nvmlDeviceGetEncoderUtilization", api.DeviceGetEncoderUtilization, &value,
         &period_us)) {
    s->encoder_utilization_ratio = value / 100.0;
  }
  if (ok(NvmlField::kDecoder, "nvmlDeviceGetDecoderUtilization", api.DeviceGetDecoderUtilization, &value,
         &period_us)) {
    s->decoder_utilization_ratio = value / 100.0;
  }
  ReadProcesses(d, index, s);
  if (d.is_mig_enabled) ReadMigInstances(d, index, s);
  ReadGpm(d, index, s);
}

void NvmlBackend::ReadSlow(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  nvml::Device h = d.handle;
  auto ok = [&](auto... call) { return Read(d, index, call...); };
  unsigned value = 0;
  if (ok(NvmlField::kFan, "nvmlDeviceGetFanSpeed", api.DeviceGetFanSpeed, &value)) {
    s->fan_speed_ratio = value / 100.0;
  }
  if (ok(NvmlField::kPcieGeneration, "nvmlDeviceGetCurrPcieLinkGeneration",
         api.DeviceGetCurrPcieLinkGeneration, &value)) {
    s->pcie_generation = static_cast<int>(value);
  }
  if (ok(NvmlField::kPcieWidth, "nvmlDeviceGetCurrPcieLinkWidth", api.DeviceGetCurrPcieLinkWidth, &value)) {
    s->pcie_width = static_cast<int>(value);
  }
  ReadFieldValues(d, index, s);
  ReadVgpuLicense(d, index, s);
  unsigned long long count = 0;
  auto ecc = [&](int type, int counter, std::optional<int64_t>* out) {
    if (ok(NvmlField::kEcc, "nvmlDeviceGetTotalEccErrors", api.DeviceGetTotalEccErrors, type, counter,
           &count)) {
      *out = static_cast<int64_t>(count);
    }
  };
  ecc(nvml::kMemoryErrorCorrected, nvml::kEccCounterVolatile, &s->ecc.volatile_corrected);
  ecc(nvml::kMemoryErrorUncorrected, nvml::kEccCounterVolatile, &s->ecc.volatile_uncorrected);
  ecc(nvml::kMemoryErrorCorrected, nvml::kEccCounterAggregate, &s->ecc.aggregate_corrected);
  ecc(nvml::kMemoryErrorUncorrected, nvml::kEccCounterAggregate, &s->ecc.aggregate_uncorrected);

  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  if (ok(NvmlField::kRemappedRows, "nvmlDeviceGetRemappedRows", api.DeviceGetRemappedRows, &corrected,
         &uncorrected, &pending, &failure)) {
    s->remapped_rows = node::RemappedRows{corrected, uncorrected, pending != 0, failure != 0};
  }

  if (api.DeviceGetNvLinkState != nullptr && Supported(d, NvmlField::kNvLink)) {
    // Links are numbered densely; the first INVALID_ARGUMENT or
    // NOT_SUPPORTED past the last one ends the scan (probed once).
    unsigned limit = d.nvlink_count >= 0 ? static_cast<unsigned>(d.nvlink_count) : nvml::kNvLinkMaxLinks;
    for (unsigned link = 0; link < limit; ++link) {
      int active = 0;
      Return r = api.DeviceGetNvLinkState(h, link, &active);
      if (r != nvml::kSuccess) {
        if (r == nvml::kErrorGpuIsLost) Check(d, index, NvmlField::kNvLink, "nvmlDeviceGetNvLinkState", r);
        break;
      }
      s->nvlink_active.push_back(active == 1);
    }
    if (d.nvlink_count < 0) d.nvlink_count = static_cast<int>(s->nvlink_active.size());
  }
}

void NvmlBackend::ReadMemory(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  nvml::Device h = d.handle;
  auto ok = [&](auto... call) { return Read(d, index, call...); };
  // Memory: v2 separates reserved from used (as nvidia-smi shows it); v1's
  // `used` includes the reserve on R510+ drivers.
  nvml::MemoryV2 memory{};
  memory.version = nvml::kMemoryV2Version;
  bool has_memory = false;
  if (api.DeviceGetMemoryInfoV2 != nullptr && Supported(d, NvmlField::kMemoryV2) &&
      d.health == node::GpuHealth::kOk) {
    Return r = api.DeviceGetMemoryInfoV2(h, &memory);
    if (r == nvml::kErrorArgumentVersionMismatch) {
      logger_->Log(LogLevel::kInfo,
                   "nvml: nvmlDeviceGetMemoryInfo_v2(gpu {}): struct version {:#x} refused; "
                   "using nvmlDeviceGetMemoryInfo",
                   index, nvml::kMemoryV2Version);
      d.unsupported[static_cast<size_t>(NvmlField::kMemoryV2)] = true;
    } else if (Check(d, index, NvmlField::kMemoryV2, "nvmlDeviceGetMemoryInfo_v2", r)) {
      s->memory_total_bytes = static_cast<int64_t>(memory.total);
      s->memory_reserved_bytes = static_cast<int64_t>(memory.reserved);
      s->memory_used_bytes = static_cast<int64_t>(memory.used);
      s->memory_free_bytes = static_cast<int64_t>(memory.free);
      has_memory = true;
    }
  }
  nvml::MemoryV1 memory_v1{};
  if (!has_memory &&
      ok(NvmlField::kMemoryV1, "nvmlDeviceGetMemoryInfo", api.DeviceGetMemoryInfo, &memory_v1)) {
    s->memory_total_bytes = static_cast<int64_t>(memory_v1.total);
    s->memory_used_bytes = static_cast<int64_t>(memory_v1.used);
    s->memory_free_bytes = static_cast<int64_t>(memory_v1.free);
  }
}

void NvmlBackend::ReadTemperature(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  nvml::Device h = d.handle;
  auto ok = [&](auto... call) { return Read(d, index, call...); };
  unsigned value = 0;
  nvml::TemperatureV1 temperature{};
  temperature.version = nvml::kTemperatureV1Version;
  temperature.sensorType = nvml::kTemperatureGpu;
  bool has_temperature = false;
  if (api.DeviceGetTemperatureV != nullptr && Supported(d, NvmlField::kTemperatureV) &&
      d.health == node::GpuHealth::kOk) {
    Return r = api.DeviceGetTemperatureV(h, &temperature);
    if (r == nvml::kErrorArgumentVersionMismatch) {
      d.unsupported[static_cast<size_t>(NvmlField::kTemperatureV)] = true;
    } else if (r == nvml::kErrorNotSupported) {
      // The sensor itself is absent: the old call will not do better.
      d.unsupported[static_cast<size_t>(NvmlField::kTemperatureV)] = true;
      d.unsupported[static_cast<size_t>(NvmlField::kTemperature)] = true;
    } else if (Check(d, index, NvmlField::kTemperatureV, "nvmlDeviceGetTemperatureV", r)) {
      s->temperature_celsius = temperature.temperature;
      has_temperature = true;
    }
  }
  if (!has_temperature && ok(NvmlField::kTemperature, "nvmlDeviceGetTemperature", api.DeviceGetTemperature,
                             nvml::kTemperatureGpu, &value)) {
    s->temperature_celsius = value;
  }
}

void NvmlBackend::ReadFieldValues(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  nvml::Device h = d.handle;
  // PCIe traffic from the byte counters (field values), never from the
  // blocking 20 ms nvmlDeviceGetPcieThroughput.
  if (api.DeviceGetFieldValues != nullptr && Supported(d, NvmlField::kPcieCounters) &&
      d.health == node::GpuHealth::kOk) {
    nvml::FieldValue fields[2] = {};
    fields[0].fieldId = nvml::kFieldPcieCountTxBytes;
    fields[1].fieldId = nvml::kFieldPcieCountRxBytes;
    if (Check(d, index, NvmlField::kPcieCounters, "nvmlDeviceGetFieldValues",
              api.DeviceGetFieldValues(h, 2, fields))) {
      // Call-level success only means some entries were filled.
      if (fields[0].nvmlReturn == nvml::kSuccess)
        s->pcie_tx_bytes = static_cast<int64_t>(fields[0].value.ullVal);
      if (fields[1].nvmlReturn == nvml::kSuccess)
        s->pcie_rx_bytes = static_cast<int64_t>(fields[1].value.ullVal);
      if (fields[0].nvmlReturn == nvml::kErrorNotSupported &&
          fields[1].nvmlReturn == nvml::kErrorNotSupported) {
        d.unsupported[static_cast<size_t>(NvmlField::kPcieCounters)] = true;
      }
    }
  }
  // Error counters (NVLink totals, PCIe replays, retired pages), one
  // field-value call; each entry carries its own return.
  if (api.DeviceGetFieldValues != nullptr && Supported(d, NvmlField::kErrorCounters) &&
      d.health == node::GpuHealth::kOk) {
    nvml::FieldValue fields[7] = {};
    const unsigned ids[7] = {nvml::kFieldNvlinkCrcDataErrorsTotal,
                             nvml::kFieldNvlinkReplayErrorsTotal,
                             nvml::kFieldNvlinkRecoveryErrorsTotal,
                             nvml::kFieldPcieReplayCounter,
                             nvml::kFieldRetiredSingleBit,
                             nvml::kFieldRetiredDoubleBit,
                             nvml::kFieldRetiredPending};
    for (int f = 0; f < 7; ++f) fields[f].fieldId = ids[f];
    std::optional<int64_t> values[7];
    if (Check(d, index, NvmlField::kErrorCounters, "nvmlDeviceGetFieldValues",
              api.DeviceGetFieldValues(h, 7, fields))) {
      bool any = false;
      for (int f = 0; f < 7; ++f) {
        if (fields[f].nvmlReturn != nvml::kSuccess) continue;
        values[f] = static_cast<int64_t>(fields[f].value.ullVal);
        any = true;
      }
      if (!any) d.unsupported[static_cast<size_t>(NvmlField::kErrorCounters)] = true;
      s->nvlink_crc_errors = values[0];
      s->nvlink_replay_errors = values[1];
      s->nvlink_recovery_errors = values[2];
      s->pcie_replays = values[3];
      if (values[4] && values[5] && values[6]) {
        s->retired_pages = node::RetiredPages{*values[4], *values[5], *values[6] != 0};
      }
    }
  }
  // HBM temperature and NVLink traffic (KiB counters since the driver
  // loaded), one field-value call; each entry carries its own return.
  if (api.DeviceGetFieldValues != nullptr && Supported(d, NvmlField::kMemoryAndNvlinkFields) &&
      d.health == node::GpuHealth::kOk) {
    nvml::FieldValue fields[3] = {};
    fields[0].fieldId = nvml::kFieldMemoryTemp;
    fields[1].fieldId = nvml::kFieldNvlinkThroughputDataTx;
    fields[2].fieldId = nvml::kFieldNvlinkThroughputDataRx;
    if (Check(d, index, NvmlField::kMemoryAndNvlinkFields, "nvmlDeviceGetFieldValues",
              api.DeviceGetFieldValues(h, 3, fields))) {
      std::optional<double> v[3];
      for (int f = 0; f < 3; ++f) {
        if (fields[f].nvmlReturn == nvml::kSuccess) v[f] = NumberOf(fields[f].value, fields[f].valueType);
      }
      if (!v[0] && !v[1] && !v[2])
        d.unsupported[static_cast<size_t>(NvmlField::kMemoryAndNvlinkFields)] = true;
      if (v[0] && *v[0] > 0) s->memory_temperature_celsius = *v[0];  // 0: no HBM sensor.
      if (v[1] && v[2]) s->nvlink_bytes = static_cast<int64_t>((*v[1] + *v[2]) * 1024);
    }
  }
}

void NvmlBackend::ReadVgpuLicense(DeviceState& d, int index, node::GpuSample* s) {
  const nvml::Api& api = library_->api();
  auto ok = [&](auto... call) { return Read(d, index, call...); };
  // A vGPU guest's license (GPUs that are not vGPUs answer no mode or
  // another one, and are left empty).
  unsigned mode = 0;
  if (api.DeviceGetGridLicensableFeaturesV3 != nullptr &&
      ok(NvmlField::kVgpuLicense, "nvmlDeviceGetVirtualizationMode", api.DeviceGetVirtualizationMode,
         &mode)) {
    if (mode != nvml::kGpuVirtualizationModeVgpu) {
      d.unsupported[static_cast<size_t>(NvmlField::kVgpuLicense)] = true;  // Fixed for the GPU's life.
    } else {
      nvml::GridLicensableFeaturesV3 features{};
      if (ok(NvmlField::kVgpuLicense, "nvmlDeviceGetGridLicensableFeatures_v3",
             api.DeviceGetGridLicensableFeaturesV3, &features) &&
          features.isGridLicenseSupported != 0) {
        bool is_licensed = false;
        unsigned n = std::min(features.licensableFeaturesCount, nvml::kGridLicenseFeatureMaxCount);
        for (unsigned f = 0; f < n; ++f) {
          const nvml::GridLicensableFeatureV3& feature = features.gridLicensableFeatures[f];
          if (feature.featureCode == nvml::kGridLicenseFeatureCodeVgpu && feature.featureState != 0)
            is_licensed = true;
        }
        s->is_vgpu_licensed = is_licensed;
      }
    }
  }
}

std::optional<double> NvmlBackend::RecentUtilization(int index, std::chrono::seconds window) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) return std::nullopt;
  DeviceState& d = devices_[static_cast<size_t>(index)];
  const nvml::Api& api = library_->api();
  if (d.handle == nullptr || d.health != node::GpuHealth::kOk || api.DeviceGetSamples == nullptr ||
      !Supported(d, NvmlField::kSamples)) {
    return std::nullopt;
  }
  // Take the driver's whole buffer and keep the samples within `window` of
  // its newest one: anchored to the device's own sample clock.
  int value_type = 0;
  unsigned count = 0;
  Return r = api.DeviceGetSamples(d.handle, nvml::kSamplingGpuUtilization, 0, &value_type, &count, nullptr);
  if (r != nvml::kSuccess && r != nvml::kErrorInsufficientSize) {
    if (r != nvml::kErrorNotFound) Check(d, index, NvmlField::kSamples, "nvmlDeviceGetSamples", r);
    return std::nullopt;
  }
  if (count == 0) return std::nullopt;
  std::vector<nvml::Sample> samples(count);
  r = api.DeviceGetSamples(d.handle, nvml::kSamplingGpuUtilization, 0, &value_type, &count, samples.data());
  if (!Check(d, index, NvmlField::kSamples, "nvmlDeviceGetSamples", r) || count == 0) return std::nullopt;
  samples.resize(std::min<size_t>(count, samples.size()));
  unsigned long long newest = 0;
  for (const nvml::Sample& sample : samples) newest = std::max(newest, sample.timeStamp);
  unsigned long long window_us = static_cast<unsigned long long>(window.count()) * 1000000ULL;
  double sum = 0;
  int n = 0;
  for (const nvml::Sample& sample : samples) {
    if (newest - sample.timeStamp >= window_us) continue;
    std::optional<double> v = NumberOf(sample.sampleValue, value_type);
    if (!v) continue;
    sum += *v;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n / 100.0;
}

}  // namespace tarmac::gpu
