// SPDX-License-Identifier: Apache-2.0
#include "cli/status_json.h"

#include <fmt/chrono.h>

#include "cli/gpu_marks.h"
#include "gpu/clock_event_reasons.h"

namespace tarmac::cli {
namespace {

using nlohmann::json;

template <typename T>
void Put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", utc, ms % 1000);
}

json GpuToJson(const GpuView& g) {
  const gpu::GpuInfo& i = g.info;
  const gpu::GpuSample& s = g.sample;
  json j;
  j["index"] = i.index;
  j["health"] = gpu::GpuHealthName(s.health);
  if (!s.error.empty()) j["error"] = s.error;
  if (!i.uuid.empty()) j["uuid"] = i.uuid;
  if (!i.name.empty()) j["name"] = i.name;
  if (!i.pci_bus_id.empty()) j["pci_bus_id"] = i.pci_bus_id;
  Put(j, "serial", i.serial);
  Put(j, "minor_number", i.minor_number);
  Put(j, "numa_node", i.numa_node);
  Put(j, "cpu_affinity", i.cpu_affinity);
  Put(j, "persistence_mode_enabled", i.is_persistence_mode_enabled);
  Put(j, "mig_enabled", i.is_mig_enabled);
  Put(j, "utilization_gpu_ratio", s.utilization_gpu_ratio);
  Put(j, "utilization_memory_ratio", s.utilization_memory_ratio);
  Put(j, "utilization_gpu_recent_ratio", g.recent_utilization_ratio);
  Put(j, "memory_total_bytes", s.memory_total_bytes ? s.memory_total_bytes : i.memory_total_bytes);
  Put(j, "memory_used_bytes", s.memory_used_bytes);
  Put(j, "memory_reserved_bytes", s.memory_reserved_bytes);
  Put(j, "memory_free_bytes", s.memory_free_bytes);
  Put(j, "power_milliwatts", s.power_milliwatts);
  Put(j, "power_limit_milliwatts", s.power_limit_milliwatts);
  Put(j, "power_limit_default_milliwatts", i.power_limit_default_milliwatts);
  Put(j, "energy_millijoules", s.energy_millijoules);
  Put(j, "temperature_celsius", s.temperature_celsius);
  Put(j, "temperature_slowdown_celsius", i.temperature_slowdown_celsius);
  Put(j, "sm_clock_hertz", s.sm_clock_hertz);
  Put(j, "sm_clock_max_hertz", i.sm_clock_max_hertz);
  Put(j, "memory_clock_hertz", s.memory_clock_hertz);
  Put(j, "memory_clock_max_hertz", i.memory_clock_max_hertz);
  if (s.clock_event_reasons) {
    j["clock_event_reasons_mask"] = *s.clock_event_reasons;
    j["clock_event_reasons"] = gpu::DecodeClockEventReasons(*s.clock_event_reasons);
  }
  Put(j, "performance_state", s.performance_state);
  Put(j, "fan_speed_ratio", s.fan_speed_ratio);
  Put(j, "pcie_generation", s.pcie_generation);
  Put(j, "pcie_generation_max", i.pcie_generation_max);
  Put(j, "pcie_width", s.pcie_width);
  Put(j, "pcie_width_max", i.pcie_width_max);
  Put(j, "pcie_tx_bytes", s.pcie_tx_bytes);
  Put(j, "pcie_rx_bytes", s.pcie_rx_bytes);
  Put(j, "pcie_tx_bytes_per_second", g.pcie_tx_bytes_per_second);
  Put(j, "pcie_rx_bytes_per_second", g.pcie_rx_bytes_per_second);
  json ecc = json::object();
  Put(ecc, "volatile_corrected", s.ecc.volatile_corrected);
  Put(ecc, "volatile_uncorrected", s.ecc.volatile_uncorrected);
  Put(ecc, "aggregate_corrected", s.ecc.aggregate_corrected);
  Put(ecc, "aggregate_uncorrected", s.ecc.aggregate_uncorrected);
  if (!ecc.empty()) j["ecc_errors"] = ecc;
  if (s.remapped_rows) {
    j["remapped_rows"] = {{"corrected", s.remapped_rows->corrected},
                          {"uncorrected", s.remapped_rows->uncorrected},
                          {"pending", s.remapped_rows->is_pending},
                          {"failure", s.remapped_rows->has_failure}};
  }
  if (!s.nvlink_active.empty()) {
    json links = json::array();
    for (bool active : s.nvlink_active) links.push_back(active);
    j["nvlink_active"] = links;
  }
  GpuMarks m = MarkGpu(g);
  if (!m.is_unreadable) {
    j["is_idle"] = m.is_idle;
    j["is_throttled"] = m.is_throttled;
    j["throttle_reasons"] = m.throttle_reasons;
    j["is_pcie_degraded"] = m.is_pcie_degraded;
  }
  json processes = json::array();
  for (const ProcessView& p : g.processes) {
    json pj;
    pj["pid"] = p.process.pid;
    pj["type"] = gpu::ProcessTypeName(p.process.type);
    Put(pj, "used_memory_bytes", p.process.used_memory_bytes);
    Put(pj, "sm_utilization_ratio", p.process.sm_utilization_ratio);
    if (p.details.exists) {
      pj["uid"] = p.details.uid;
      pj["user"] = p.details.user;
      pj["name"] = p.details.name;
      pj["command"] = p.details.command;
      pj["parent_pid"] = p.details.parent_pid;
    }
    pj["is_idle_holding"] = IsIdleHolding(p, g);
    processes.push_back(pj);
  }
  if (s.health == gpu::GpuHealth::kOk) j["processes"] = processes;
  return j;
}

}  // namespace

json StatusToJson(const FleetView& fleet) {
  json j;
  j["version"] = kStatusJsonVersion;
  j["host"] = fleet.hostname;
  j["backend"] = fleet.backend;
  j["taken_at"] = Rfc3339(fleet.taken_at);
  if (!fleet.system.driver_version.empty()) j["driver_version"] = fleet.system.driver_version;
  if (!fleet.system.nvml_version.empty()) j["nvml_version"] = fleet.system.nvml_version;
  Put(j, "cuda_driver_version", fleet.system.cuda_driver_version);
  json gpus = json::array();
  for (const GpuView& g : fleet.gpus) gpus.push_back(GpuToJson(g));
  j["gpus"] = gpus;
  return j;
}

}  // namespace tarmac::cli
