// SPDX-License-Identifier: Apache-2.0
#include "gpu/sim_backend.h"

#include <fmt/format.h>

#include <cmath>

#include "common/cpu_list.h"

namespace tarmac::gpu {

SimBackend::SimBackend(sim::WorldOptions options, Clock* clock)
    : options_(std::move(options)), clock_(clock) {}

Result<std::vector<node::GpuInfo>> SimBackend::Open() {
  Result<std::unique_ptr<sim::World>> world = sim::World::Open(options_, clock_);
  if (!world.ok()) return world.status().WithContext("sim");
  world_ = std::move(world).value();
  const sim::Scenario& scenario = world_->scenario();
  std::shared_ptr<const sim::WorldState> state = world_->State();
  if (!state->is_driver_loaded) {
    return Status::Unavailable(fmt::format("sim: scenario '{}': NVIDIA driver not loaded", scenario.name));
  }
  system_info_.driver_version = scenario.driver_version;
  system_info_.nvml_version = scenario.nvml_version;
  system_info_.cuda_driver_version = scenario.cuda_driver_version;
  system_info_.library_path = scenario.path;

  previous_fast_sample_.assign(scenario.gpus.size(), std::nullopt);
  std::vector<node::GpuInfo> gpus;
  for (const sim::GpuSpec& spec : scenario.gpus) {
    node::GpuInfo info;
    info.index = spec.index;
    // Like the driver, a device that cannot be opened yields no identity.
    if (spec.has_no_permission) {
      info.health = node::GpuHealth::kNoPermission;
      info.error = fmt::format("sim: gpu {}: insufficient permissions", spec.index);
      gpus.push_back(std::move(info));
      continue;
    }
    if (state->gpus[static_cast<size_t>(spec.index)].is_lost) {
      info.health = node::GpuHealth::kLost;
      info.error = fmt::format("sim: gpu {}: GPU is lost", spec.index);
      gpus.push_back(std::move(info));
      continue;
    }
    info.uuid = spec.uuid;
    info.name = spec.model;
    info.pci_bus_id = fmt::format("00000000:{:02X}:00.0", spec.pci_bus);
    if (spec.Supports("serial")) info.serial = spec.serial;
    info.minor_number = spec.index;
    info.memory_total_bytes = spec.memory_total_bytes;
    if (spec.Supports("power")) {
      info.power_limit_default_milliwatts = std::llround(spec.power_limit_watts * 1000);
    }
    info.sm_clock_max_hertz = int64_t{spec.sm_clock_max_mhz} * 1000000;
    info.memory_clock_max_hertz = int64_t{spec.memory_clock_mhz} * 1000000;
    info.pcie_generation_max = spec.pcie_generation;
    info.pcie_width_max = spec.pcie_width;
    if (spec.Supports("numa_node")) info.numa_node = spec.numa_node;
    for (int peer : spec.nvlink_peers) {
      // A link to a GPU that fell off the bus is down, as NVML reports it.
      if (state->gpus[static_cast<size_t>(peer)].is_lost) continue;
      info.nvlink_peer_bus_ids.push_back(
          fmt::format("00000000:{:02X}:00.0", scenario.gpus[static_cast<size_t>(peer)].pci_bus));
    }
    Result<std::vector<uint64_t>> cpus = ParseCpuList(spec.cpus);
    if (cpus.ok()) info.cpu_affinity = FormatCpuList(cpus.value());
    info.is_persistence_mode_enabled = spec.is_persistence_mode_enabled;
    info.is_mig_enabled = spec.is_mig_enabled;
    info.is_mig_pending = spec.is_mig_pending;
    info.temperature_slowdown_celsius = spec.slowdown_celsius;
    gpus.push_back(std::move(info));
  }
  return gpus;
}

Result<node::GpuSample> SimBackend::Sample(int index, unsigned tiers) {
  if (world_ == nullptr) return Status::FailedPrecondition("sim: backend not open");
  const sim::Scenario& scenario = world_->scenario();
  if (index < 0 || index >= static_cast<int>(scenario.gpus.size())) {
    return Status::InvalidArgument(fmt::format("sim: no gpu {}", index));
  }
  const sim::GpuSpec& spec = scenario.gpus[static_cast<size_t>(index)];
  std::shared_ptr<const sim::WorldState> state = world_->StateWhenResponsive(index);
  const sim::GpuState& g = state->gpus[static_cast<size_t>(index)];
  node::GpuSample s;
  s.index = index;
  s.taken_at = state->evaluated_at;
  if (!state->is_driver_loaded) {
    s.health = node::GpuHealth::kDriverNotLoaded;
    s.error = "sim: NVIDIA driver not loaded";
    return s;
  }
  if (spec.has_no_permission) {
    s.health = node::GpuHealth::kNoPermission;
    s.error = fmt::format("sim: gpu {}: insufficient permissions", index);
    return s;
  }
  if (g.is_lost) {
    s.health = node::GpuHealth::kLost;
    s.error = fmt::format("sim: gpu {}: GPU is lost", index);
    return s;
  }
  if (tiers & node::kFastTier) ReadFast(index, spec, g, &s);
  if (tiers & node::kSlowTier) ReadSlow(spec, g, &s);
  return s;
}

void SimBackend::ReadFast(int index, const sim::GpuSpec& spec, const sim::GpuState& g,
                          node::GpuSample* sample) {
  node::GpuSample& s = *sample;
  if (spec.Supports("utilization") && !spec.is_mig_enabled) {
    s.utilization_gpu_ratio = g.utilization_gpu_percent / 100.0;
    s.utilization_memory_ratio = g.utilization_memory_percent / 100.0;
  }
  s.memory_total_bytes = g.memory_total_bytes;
  s.memory_reserved_bytes = g.memory_reserved_bytes;
  s.memory_used_bytes = g.memory_used_bytes;
  s.memory_free_bytes = g.memory_free_bytes;
  if (spec.Supports("power")) {
    s.power_milliwatts = g.power_milliwatts;
    s.power_limit_milliwatts = g.power_limit_milliwatts;
  }
  if (spec.Supports("energy")) s.energy_millijoules = g.energy_millijoules;
  if (spec.Supports("temperature")) s.temperature_celsius = g.temperature_celsius;
  s.sm_clock_hertz = int64_t{g.sm_clock_mhz} * 1000000;
  s.memory_clock_hertz = int64_t{g.memory_clock_mhz} * 1000000;
  if (spec.Supports("clock_event_reasons")) s.clock_event_reasons = g.clock_event_reasons;
  if (spec.Supports("performance_state")) s.performance_state = g.performance_state;
  if (!spec.is_mig_enabled) {  // Compute-only loads: the video engines idle.
    s.encoder_utilization_ratio = 0.0;
    s.decoder_utilization_ratio = 0.0;
  }
  bool has_process_utilization = spec.Supports("process_utilization") && !spec.is_mig_enabled;
  for (const sim::ProcessState& p : g.processes) {
    node::GpuProcess process;
    process.pid = p.pid;
    process.type = node::ProcessType::kCompute;
    process.used_memory_bytes = p.used_memory_bytes;
    if (has_process_utilization) process.sm_utilization_ratio = p.sm_utilization_percent / 100.0;
    if (p.gpu_instance_id >= 0) {
      process.gpu_instance_id = p.gpu_instance_id;
      process.compute_instance_id = p.compute_instance_id;
    }
    s.processes.push_back(process);
  }
  s.has_processes = true;
  s.has_mig_instances = spec.is_mig_enabled;
  for (const sim::MigInstanceState& m : g.mig_instances) {
    node::MigInstance mi;
    mi.uuid = m.spec->uuid;
    mi.gpu_instance_id = m.spec->gpu_instance_id;
    mi.compute_instance_id = m.spec->compute_instance_id;
    mi.profile = m.spec->profile;
    mi.memory_total_bytes = m.spec->memory_total_bytes;
    mi.memory_used_bytes = m.memory_used_bytes;
    s.mig_instances.push_back(std::move(mi));
  }
  ReadGpm(index, spec, sample);
}

void SimBackend::ReadGpm(int index, const sim::GpuSpec& spec, node::GpuSample* sample) {
  node::GpuSample& s = *sample;
  // GPM: engine activity since this GPU's previous fast sample.
  std::optional<std::chrono::system_clock::time_point>& previous =
      previous_fast_sample_[static_cast<size_t>(index)];
  if (spec.Supports("gpm")) {
    if (previous && *previous < s.taken_at) {
      sim::EngineActivity a = world_->MeanEngineActivity(index, *previous, s.taken_at);
      s.graphics_engine_active_ratio = a.graphics;
      s.tensor_active_ratio = a.tensor;
      s.dram_active_ratio = a.dram;
      for (node::MigInstance& mi : s.mig_instances) {  // Per instance (nvmlGpmMigSampleGet).
        sim::EngineActivity m = world_->MeanEngineActivity(index, *previous, s.taken_at, mi.gpu_instance_id);
        mi.graphics_engine_active_ratio = m.graphics;
        mi.tensor_active_ratio = m.tensor;
        mi.dram_active_ratio = m.dram;
      }
    }
    previous = s.taken_at;
  }
}

void SimBackend::ReadSlow(const sim::GpuSpec& spec, const sim::GpuState& g, node::GpuSample* sample) {
  node::GpuSample& s = *sample;
  if (spec.Supports("fan")) s.fan_speed_ratio = g.fan_percent / 100.0;
  s.pcie_generation = g.pcie_generation;
  s.pcie_width = g.pcie_width;
  if (spec.Supports("pcie_counters")) {
    s.pcie_tx_bytes = g.pcie_tx_bytes;
    s.pcie_rx_bytes = g.pcie_rx_bytes;
  }
  if (spec.has_ecc && spec.Supports("ecc")) {
    s.ecc.volatile_corrected = g.ecc_corrected;
    s.ecc.volatile_uncorrected = g.ecc_uncorrected;
    s.ecc.aggregate_corrected = g.ecc_corrected;
    s.ecc.aggregate_uncorrected = g.ecc_uncorrected;
  }
  if (spec.has_remapped_rows && spec.Supports("remapped_rows") &&
      g.mig_instances.empty()) {  // Not with instances.
    node::RemappedRows rows;
    rows.corrected = g.remapped_rows_corrected;
    rows.uncorrected = g.remapped_rows_uncorrected;
    rows.is_pending = g.is_remap_pending;
    s.remapped_rows = rows;
  }
  s.nvlink_active = g.nvlink_active;
  if (!g.nvlink_active.empty()) {
    s.nvlink_crc_errors = g.nvlink_crc_errors;
    s.nvlink_replay_errors = g.nvlink_replay_errors;
    s.nvlink_recovery_errors = g.nvlink_recovery_errors;
  }
  if (spec.Supports("pcie_counters")) s.pcie_replays = g.pcie_replays;
  // The HBM runs 5 C above the GPU; no data moves over NVLink.
  if (spec.Supports("temperature")) s.memory_temperature_celsius = g.temperature_celsius + 5;
  if (!g.nvlink_active.empty()) s.nvlink_bytes = 0;
  if (spec.is_vgpu) s.is_vgpu_licensed = spec.is_vgpu_licensed;
  if (spec.has_ecc && spec.Supports("ecc") && !spec.has_remapped_rows) {
    s.retired_pages =
        node::RetiredPages{g.retired_pages_single_bit, g.retired_pages_double_bit, g.is_retire_pending};
  }
}

std::optional<double> SimBackend::RecentUtilization(int index, std::chrono::seconds window) {
  if (world_ == nullptr || index < 0 || index >= static_cast<int>(world_->scenario().gpus.size())) {
    return std::nullopt;
  }
  const sim::GpuSpec& spec = world_->scenario().gpus[static_cast<size_t>(index)];
  if (!spec.Supports("utilization") || spec.is_mig_enabled || spec.has_no_permission) return std::nullopt;
  std::shared_ptr<const sim::WorldState> state = world_->State();
  if (!state->is_driver_loaded || state->gpus[static_cast<size_t>(index)].is_lost) return std::nullopt;
  auto history = world_->UtilizationHistory(index, window);
  if (history.empty()) return std::nullopt;
  int64_t sum = 0;
  for (const auto& [at, percent] : history) sum += percent;
  return static_cast<double>(sum) / static_cast<double>(history.size()) / 100.0;
}

Result<std::vector<node::GpuEvent>> SimBackend::WaitEvents(std::chrono::milliseconds timeout) {
  if (world_ == nullptr) return Status::FailedPrecondition("sim: backend not open");
  std::chrono::steady_clock::time_point deadline = clock_->SteadyNow() + timeout;
  if (!events_seen_until_) events_seen_until_ = world_->Now();
  for (;;) {
    std::chrono::system_clock::time_point now = world_->Now();
    std::vector<sim::WorldEvent> events =
        sim::EventsBetween(world_->scenario(), world_->epoch(), *events_seen_until_, now);
    events_seen_until_ = std::max(*events_seen_until_, now);
    if (!events.empty()) {
      std::vector<node::GpuEvent> out;
      for (const sim::WorldEvent& e : events) {
        out.push_back(node::GpuEvent{e.gpu, e.event_type, e.xid, e.at});
      }
      return out;
    }
    std::chrono::steady_clock::time_point step = clock_->SteadyNow() + std::chrono::milliseconds(100);
    if (step > deadline) step = deadline;
    if (clock_->SteadyNow() >= deadline) return std::vector<node::GpuEvent>{};
    clock_->SleepUntil(step, std::stop_token());
  }
}

}  // namespace tarmac::gpu
