// SPDX-License-Identifier: Apache-2.0
#include "sim/world_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "nvidia/clock_event_reasons.h"

namespace tarmac::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

constexpr double kBurstPeriodSeconds = 20.0;
constexpr double kBurstOnShare = 0.4;    // Share of each period at peak.
constexpr double kBurstOffLevel = 0.05;  // Level between bursts, of peak.
constexpr double kPcieRxBytesPerSecondAtFull = 4.0e9;
constexpr double kPcieTxBytesPerSecondAtFull = 1.0e9;
constexpr double kPcieIdleBytesPerSecond = 1.0e5;

double Seconds(milliseconds t) { return static_cast<double>(t.count()) / 1000.0; }

// A per-process phase in [0, 1), so loads started together do not move in
// lockstep.
double Phase(int64_t pid) {
  uint64_t x = static_cast<uint64_t>(pid) * 0x9e3779b97f4a7c15ULL;
  return static_cast<double>(x >> 11) / static_cast<double>(1ULL << 53);
}

// Mean of LoadUtilizationAt over time, for the integrated counters.
double MeanUtilization(const Load& load) {
  switch (load.pattern) {
    case LoadPattern::kSteady:
      return load.utilization_ratio;
    case LoadPattern::kBursty:
      return load.utilization_ratio * (kBurstOnShare + (1 - kBurstOnShare) * kBurstOffLevel);
    case LoadPattern::kIdle:
      return 0;
  }
  return 0;
}

bool IsActive(const Load& load, system_clock::time_point at) {
  return load.started_at <= at && (!load.ended_at || at < *load.ended_at);
}

bool UsesGpu(const Load& load, int gpu) {
  return std::find(load.gpus.begin(), load.gpus.end(), gpu) != load.gpus.end();
}

// Seconds the load was active within [epoch, now].
double ActiveSeconds(const Load& load, system_clock::time_point epoch, system_clock::time_point now) {
  system_clock::time_point begin = std::max(load.started_at, epoch);
  system_clock::time_point end = load.ended_at ? std::min(*load.ended_at, now) : now;
  if (end <= begin) return 0;
  return std::chrono::duration<double>(end - begin).count();
}

bool FaultActive(const Fault& f, milliseconds t) { return f.at <= t && (!f.until || t < *f.until); }

milliseconds SinceEpoch(system_clock::time_point epoch, system_clock::time_point now) {
  return std::chrono::duration_cast<milliseconds>(now - epoch);
}

// One load's part of a GPU: its utilization share (0..1, of its device:
// the GPU, or its MIG instance) and, under MIG, the instance (index into
// the layout; -1 on a GPU without MIG).
struct Share {
  const Load* load = nullptr;
  double share = 0;
  int instance = -1;
};

// The instance of `mig` a load runs in, or -1.
int InstanceOf(const Load& load, const std::vector<MigInstanceSpec>& mig) {
  for (size_t i = 0; i < mig.size(); ++i) {
    if (std::find(load.mig_uuids.begin(), load.mig_uuids.end(), mig[i].uuid) != load.mig_uuids.end()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Per-process utilization on one GPU (or, under MIG, per instance), scaled
// down together when they would exceed 100 % of their device. On a GPU in
// MIG mode only loads in its instances count; `only_instance` >= 0 keeps
// those of that instance.
std::vector<Share> Shares(const Scenario& scenario, const std::vector<Load>& loads, int gpu,
                          system_clock::time_point at, milliseconds t, int only_instance = -1) {
  const GpuSpec& spec = scenario.gpus[static_cast<size_t>(gpu)];
  const std::vector<MigInstanceSpec>& mig = MigInstancesAt(scenario, gpu, t);
  std::vector<Share> shares;
  std::vector<double> total(std::max<size_t>(mig.size(), 1), 0);
  for (const Load& load : loads) {
    if (!UsesGpu(load, gpu) || !IsActive(load, at)) continue;
    int instance = -1;
    if (spec.is_mig_enabled) {
      instance = InstanceOf(load, mig);
      if (instance < 0 || (only_instance >= 0 && instance != only_instance)) continue;
    }
    double u = LoadUtilizationAt(load, t);
    shares.push_back({&load, u, instance});
    total[static_cast<size_t>(std::max(instance, 0))] += u;
  }
  for (Share& s : shares) {
    double sum = total[static_cast<size_t>(std::max(s.instance, 0))];
    if (sum > 1.0) s.share /= sum;
  }
  return shares;
}

// The device-wide activity of shares: under MIG each instance's part
// weighs its compute slices of 7.
double Weight(const Scenario& scenario, int gpu, milliseconds t, const Share& s) {
  if (s.instance < 0) return 1.0;
  return MigInstancesAt(scenario, gpu, t)[static_cast<size_t>(s.instance)].compute_slices / 7.0;
}

}  // namespace

double LoadUtilizationAt(const Load& load, milliseconds t) {
  double s = Seconds(t);
  double phase = Phase(load.pid);
  switch (load.pattern) {
    case LoadPattern::kSteady: {
      // A gentle deterministic wobble of +-2 % of the target.
      double wobble = 0.02 * std::sin(2 * std::numbers::pi * (s / 7.0 + phase));
      return std::clamp(load.utilization_ratio * (1 + wobble), 0.0, 1.0);
    }
    case LoadPattern::kBursty: {
      double position = std::fmod(s / kBurstPeriodSeconds + phase, 1.0);
      if (position < 0) position += 1;
      return position < kBurstOnShare ? load.utilization_ratio : load.utilization_ratio * kBurstOffLevel;
    }
    case LoadPattern::kIdle:
      return 0;
  }
  return 0;
}

int UtilizationPercentAt(const Scenario& scenario, int gpu, const std::vector<Load>& loads,
                         system_clock::time_point epoch, system_clock::time_point at) {
  if (gpu < 0 || gpu >= static_cast<int>(scenario.gpus.size())) return 0;
  double total = 0;
  milliseconds t = SinceEpoch(epoch, at);
  for (const Share& s : Shares(scenario, loads, gpu, at, t)) total += s.share * Weight(scenario, gpu, t, s);
  return static_cast<int>(std::lround(std::min(total, 1.0) * 100));
}

EngineActivity EngineActivityAt(const Scenario& scenario, int gpu, const std::vector<Load>& loads,
                                system_clock::time_point epoch, system_clock::time_point at,
                                int gpu_instance_id) {
  EngineActivity a;
  if (gpu < 0 || gpu >= static_cast<int>(scenario.gpus.size())) return a;
  milliseconds t = SinceEpoch(epoch, at);
  int only = -1;
  if (gpu_instance_id >= 0) {
    const std::vector<MigInstanceSpec>& mig = MigInstancesAt(scenario, gpu, t);
    for (size_t i = 0; i < mig.size(); ++i) {
      if (mig[i].gpu_instance_id == gpu_instance_id) only = static_cast<int>(i);
    }
    if (only < 0) return a;
  }
  for (const Share& s : Shares(scenario, loads, gpu, at, t, only)) {
    double w = only >= 0 ? 1.0 : Weight(scenario, gpu, t, s);
    a.graphics += s.share * w;
    a.tensor += s.share * w * s.load->tensor_ratio;
  }
  a.graphics = std::min(a.graphics, 1.0);
  a.tensor = std::min(a.tensor, 1.0);
  a.dram = a.graphics * 0.55;
  return a;
}

namespace {

// What the scenario's faults so far do to one GPU that its state does not
// carry itself.
struct FaultEffects {
  bool is_thermal = false;
  double power_limit_w = 0;
};

FaultEffects ApplyFaults(const Scenario& scenario, const GpuSpec& spec, milliseconds t, GpuState* g) {
  FaultEffects effects;
  effects.power_limit_w = spec.power_limit_watts;
  milliseconds thermal_through{0};  // The end of the thermal time counted so far (faults come in order).
  for (const Fault& f : scenario.faults) {
    if (f.at > t) break;
    if (f.gpu != spec.index) continue;
    if (f.kind == FaultKind::kThermalThrottle) {  // Overlapping windows count once.
      milliseconds end = f.until ? std::min(*f.until, t) : t;
      milliseconds start = std::max(f.at, thermal_through);
      if (end > start) g->thermal_violation_ms += (end - start).count();
      thermal_through = std::max(thermal_through, end);
    }
    switch (f.kind) {
      case FaultKind::kFallOffBus:
        g->is_lost = true;
        break;
      case FaultKind::kNvmlHang:
        g->is_hung |= FaultActive(f, t);
        break;
      case FaultKind::kThermalThrottle:
        effects.is_thermal |= FaultActive(f, t);
        break;
      case FaultKind::kPowerThrottle:
        if (FaultActive(f, t)) effects.power_limit_w = std::min(effects.power_limit_w, f.power_limit_watts);
        break;
      case FaultKind::kPcieDowntrain:
        if (FaultActive(f, t)) g->pcie_width = std::min(g->pcie_width, f.pcie_width);
        break;
      case FaultKind::kNvlinkDown:
        if (FaultActive(f, t) && f.link < static_cast<int>(g->nvlink_active.size())) {
          g->nvlink_active[static_cast<size_t>(f.link)] = false;
        }
        break;
      case FaultKind::kNvlinkErrors:
        if (f.nvlink_error == "replay")
          g->nvlink_replay_errors += f.count;
        else if (f.nvlink_error == "recovery")
          g->nvlink_recovery_errors += f.count;
        else
          g->nvlink_crc_errors += f.count;
        break;
      case FaultKind::kPcieReplay:
        g->pcie_replays += f.count;
        break;
      case FaultKind::kEccError:
        if (!f.is_uncorrected) {
          g->ecc_corrected += f.count;
        } else if (spec.has_remapped_rows) {
          g->ecc_uncorrected += f.count;
          g->remapped_rows_uncorrected += f.count;
          g->is_remap_pending = true;
        } else {
          g->ecc_uncorrected += f.count;
          g->retired_pages_double_bit += f.count;
          g->is_retire_pending = true;
        }
        break;
      default:
        break;
    }
  }
  return effects;
}

// The GPU's memory, MIG instances, processes and utilization from the
// loads on it; whether any process holds a context there.
bool PlaceProcesses(const Scenario& scenario, const std::vector<Load>& loads, const GpuSpec& spec,
                    system_clock::time_point now, milliseconds t, GpuState* g) {
  const int gpu = spec.index;
  g->memory_total_bytes = spec.memory_total_bytes;
  g->memory_reserved_bytes = spec.memory_reserved_bytes;
  double utilization = 0;
  bool has_contexts = false;
  for (const MigInstanceSpec& m : MigInstancesAt(scenario, gpu, t)) {
    MigInstanceState ms;
    ms.spec = &m;
    g->mig_instances.push_back(ms);
  }
  for (const Share& s : Shares(scenario, loads, gpu, now, t)) {
    ProcessState p;
    p.pid = s.load->pid;
    p.used_memory_bytes = s.load->memory_bytes;
    p.sm_utilization_percent = static_cast<int>(std::lround(s.share * 100));
    if (s.instance >= 0) {
      MigInstanceState& ms = g->mig_instances[static_cast<size_t>(s.instance)];
      p.gpu_instance_id = ms.spec->gpu_instance_id;
      p.compute_instance_id = ms.spec->compute_instance_id;
      p.used_memory_bytes = std::min(p.used_memory_bytes, ms.spec->memory_total_bytes - ms.memory_used_bytes);
      ms.memory_used_bytes += p.used_memory_bytes;
      ms.utilization_percent += p.sm_utilization_percent;
    }
    g->memory_used_bytes += p.used_memory_bytes;
    utilization += s.share * Weight(scenario, gpu, t, s);
    has_contexts = true;
    g->processes.push_back(p);
  }
  for (MigInstanceState& ms : g->mig_instances)
    ms.utilization_percent = std::min(ms.utilization_percent, 100);
  std::sort(g->processes.begin(), g->processes.end(),
            [](const ProcessState& a, const ProcessState& b) { return a.pid < b.pid; });
  g->memory_used_bytes = std::min(g->memory_used_bytes, g->memory_total_bytes - g->memory_reserved_bytes);
  g->memory_free_bytes = g->memory_total_bytes - g->memory_reserved_bytes - g->memory_used_bytes;
  g->utilization_gpu_percent = static_cast<int>(std::lround(std::min(utilization, 1.0) * 100));
  g->utilization_memory_percent = static_cast<int>(std::lround(g->utilization_gpu_percent * 0.55));
  return has_contexts;
}

// Power, limits, temperature, fans and clocks from the utilization.
void SetPowerAndClocks(const GpuSpec& spec, const FaultEffects& faults, bool has_contexts, GpuState* g) {
  double u = g->utilization_gpu_percent / 100.0;
  double clock_scale = 1.0;
  double demand_w = spec.power_idle_watts + (spec.power_max_watts - spec.power_idle_watts) * u;
  double power_w = demand_w;
  if (demand_w > faults.power_limit_w) {
    power_w = faults.power_limit_w;
    g->clock_event_reasons |= nvidia::kReasonSwPowerCap;
    double headroom = (faults.power_limit_w - spec.power_idle_watts) / (demand_w - spec.power_idle_watts);
    clock_scale = std::clamp(headroom, 0.5, 1.0);
  }
  g->power_milliwatts = std::llround(power_w * 1000);
  g->power_limit_milliwatts = std::llround(faults.power_limit_w * 1000);

  double temperature = spec.ambient_celsius + power_w * spec.thermal_celsius_per_watt;
  if (faults.is_thermal) {
    temperature = std::max(temperature, spec.slowdown_celsius + 2);
    g->clock_event_reasons |= nvidia::kReasonHwThermalSlowdown | nvidia::kReasonSwThermalSlowdown;
    clock_scale = std::min(clock_scale, 0.6);
  } else if (temperature >= spec.slowdown_celsius) {
    g->clock_event_reasons |= nvidia::kReasonSwThermalSlowdown;
    clock_scale = std::min(clock_scale, 0.85);
  }
  g->temperature_celsius = static_cast<int>(std::lround(temperature));
  g->fan_percent =
      static_cast<int>(std::lround(std::clamp(30 + (temperature - spec.ambient_celsius) * 1.2, 30.0, 100.0)));

  // A context keeps the GPU out of its lowest P-state; with no kernel
  // running, GPU_IDLE is set and the clocks drop to idle, as NVML's reason
  // says ("nothing is running on the GPU and the clocks are dropping to
  // Idle state", nvmlClocksEventReasonGpuIdle).
  bool is_idle = g->utilization_gpu_percent == 0;
  if (is_idle) g->clock_event_reasons |= nvidia::kReasonGpuIdle;
  g->performance_state = has_contexts ? 0 : 8;
  g->sm_clock_mhz = has_contexts && !is_idle
                        ? static_cast<int>(std::lround(spec.sm_clock_max_mhz * clock_scale))
                        : spec.sm_clock_idle_mhz;
  g->memory_clock_mhz = spec.memory_clock_mhz;
}

// Energy and PCIe bytes integrated since the epoch, and PCIe rates now.
void SetCounters(const GpuSpec& spec, const std::vector<Load>& loads, system_clock::time_point epoch,
                 system_clock::time_point now, double elapsed_s, GpuState* g) {
  double u = g->utilization_gpu_percent / 100.0;
  double energy_j = spec.power_idle_watts * elapsed_s;
  double rx = kPcieIdleBytesPerSecond * elapsed_s;
  double tx = kPcieIdleBytesPerSecond * elapsed_s;
  for (const Load& load : loads) {
    if (!UsesGpu(load, spec.index)) continue;
    double active_s = ActiveSeconds(load, epoch, now);
    double mean = MeanUtilization(load);
    energy_j += (spec.power_max_watts - spec.power_idle_watts) * mean * active_s;
    rx += kPcieRxBytesPerSecondAtFull * mean * active_s;
    tx += kPcieTxBytesPerSecondAtFull * mean * active_s;
  }
  g->energy_millijoules = std::llround(energy_j * 1000);
  g->pcie_rx_bytes = std::llround(rx);
  g->pcie_tx_bytes = std::llround(tx);
  g->pcie_rx_kilobytes_per_second =
      std::llround((kPcieIdleBytesPerSecond + kPcieRxBytesPerSecondAtFull * u) / 1024);
  g->pcie_tx_kilobytes_per_second =
      std::llround((kPcieIdleBytesPerSecond + kPcieTxBytesPerSecondAtFull * u) / 1024);
}

}  // namespace

WorldState EvaluateWorld(const Scenario& scenario, const std::vector<Load>& loads,
                         system_clock::time_point epoch, system_clock::time_point now) {
  WorldState world;
  world.evaluated_at = now;
  milliseconds t = SinceEpoch(epoch, now);
  double elapsed_s = std::max(0.0, Seconds(t));

  world.is_driver_loaded = scenario.is_driver_loaded;
  for (const Fault& f : scenario.faults) {
    if (f.at > t) break;
    if (f.kind == FaultKind::kDriverUnloaded) world.is_driver_loaded = false;
    if (f.kind == FaultKind::kDriverLoaded) world.is_driver_loaded = true;
  }
  for (const GpuSpec& spec : scenario.gpus) {
    GpuState g;
    g.pcie_generation = spec.pcie_generation;
    g.pcie_width = spec.pcie_width;
    g.nvlink_active.assign(static_cast<size_t>(NvlinkLinkCount(spec)), true);
    FaultEffects faults = ApplyFaults(scenario, spec, t, &g);
    bool has_contexts = PlaceProcesses(scenario, loads, spec, now, t, &g);
    SetPowerAndClocks(spec, faults, has_contexts, &g);
    SetCounters(spec, loads, epoch, now, elapsed_s, &g);
    world.gpus.push_back(std::move(g));
  }
  return world;
}

std::vector<WorldEvent> EventsBetween(const Scenario& scenario, system_clock::time_point epoch,
                                      system_clock::time_point from, system_clock::time_point to) {
  std::vector<WorldEvent> events;
  milliseconds t_from = SinceEpoch(epoch, from);
  milliseconds t_to = SinceEpoch(epoch, to);
  for (const Fault& f : scenario.faults) {
    if (f.at <= t_from || f.at > t_to) continue;
    WorldEvent e;
    e.at = epoch + std::chrono::duration_cast<system_clock::duration>(f.at);
    e.gpu = f.gpu;
    if (f.kind == FaultKind::kXid || f.kind == FaultKind::kFallOffBus) {
      e.event_type = 0x8;  // nvmlEventTypeXidCriticalError
      e.xid = f.xid;
    } else if (f.kind == FaultKind::kEccError && f.is_uncorrected) {
      e.event_type = 0x8;
      e.xid = 48;  // Double-bit ECC error.
    } else if (f.kind == FaultKind::kMigReconfigure) {
      e.event_type = 0x100;  // nvmlEventMigConfigChange
    } else {
      continue;
    }
    events.push_back(e);
  }
  return events;
}

}  // namespace tarmac::sim
