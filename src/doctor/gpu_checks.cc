// SPDX-License-Identifier: Apache-2.0
//
// Question 1: are the GPUs busy, and healthy?
#include <fmt/format.h>

#include <map>
#include <set>

#include "common/units.h"
#include "doctor/checks.h"
#include "node/gpu_marks.h"
#include "nvidia/clock_event_reasons.h"
#include "nvidia/xid_catalog.h"

namespace tarmac::doctor {
namespace {

// "800ms", "1m 30s": a span of the readings, never "0 s" for a short one.
std::string Span(double seconds) {
  return FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5)));
}

}  // namespace
namespace {

// Retired pages at which a board is due for replacement (the driver
// retires at most 64).
constexpr int64_t kRetiredPagesLimit = 60;

// Kernel log Xids older than this are history, not findings.
constexpr double kXidMaxAgeSeconds = 24 * 3600;

double Share(double part, double whole) { return whole > 0 ? part / whole : 0; }

// "NVIDIA H100 80GB HBM3 at 00000000:18:00.0 (GPU-...): ", what is known of it.
std::string Identity(const node::GpuView& g) {
  std::string out = g.info.name;
  if (!g.info.pci_bus_id.empty()) out += (out.empty() ? "" : " at ") + g.info.pci_bus_id;
  if (!g.info.uuid.empty()) out += " (" + g.info.uuid + ")";
  return out.empty() ? std::string() : out + ": ";
}

}  // namespace

void CheckDriver(const DoctorInputs& in, CheckOutput* out) {
  if (!in.gpu_error.empty()) {
    out->findings.push_back(MakeFinding(
        "driver", Severity::kCritical, std::nullopt, "the GPUs cannot be read through NVML", in.gpu_error,
        "without NVML nothing can use or watch the GPUs: the driver is not loaded, its "
        "library does not match the kernel module, or access is refused",
        "check `lsmod | grep nvidia` and `dmesg | grep NVRM`; after a driver upgrade, "
        "reboot (or reload the modules) so the kernel module matches the library"));
    return;
  }
  const node::SystemInfo& s = in.node_view.system;
  if (!s.driver_version.empty() && !s.nvml_version.empty() &&
      s.nvml_version.find(s.driver_version) == std::string::npos) {
    out->findings.push_back(MakeFinding(
        "driver", Severity::kWarning, std::nullopt, "the NVML library and the driver are different versions",
        fmt::format("driver {}, NVML {}", s.driver_version, s.nvml_version),
        "a library from another driver release answers for this one: some readings may be "
        "missing or wrong",
        "make the loaded libnvidia-ml.so.1 the one of the installed driver "
        "(ldconfig -p | grep nvidia-ml)"));
  }
}

void CheckVisibility(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    node::GpuHealth h = g.sample.health;
    if (h == node::GpuHealth::kOk) continue;
    bool is_lost = h == node::GpuHealth::kLost;
    out->findings.push_back(MakeFinding(
        "visibility",
        is_lost || h == node::GpuHealth::kUnresponsive ? Severity::kCritical : Severity::kWarning,
        g.info.index, fmt::format("gpu {} is {}", g.info.index, node::GpuHealthName(h)),
        Identity(g) + (g.sample.error.empty() ? node::GpuHealthName(h) : g.sample.error),
        is_lost ? "the GPU stopped answering on PCIe (fallen off the bus): nothing can use it until a reset"
                : "the driver cannot read this GPU: jobs on it may hang or fail",
        is_lost ? "drain the node and reboot; check power, cooling and the slot; RMA if it recurs"
                : "look for Xid errors on it (below); reset the GPU (nvidia-smi -r) when it is free"));
  }
  if (!in.pci_gpus) {
    out->skipped.push_back(
        {"visibility", "/sys/bus/pci could not be read: GPUs on the bus not compared with NVML"});
    return;
  }
  if (!in.gpu_error.empty()) return;  // CheckDriver said it.
  std::set<std::string> seen;
  for (const node::GpuView& g : in.node_view.gpus) seen.insert(NormalizePciAddress(g.info.pci_bus_id));
  for (const PciGpu& p : *in.pci_gpus) {
    if (seen.count(p.address)) continue;
    if (p.driver == "vfio-pci") {
      out->findings.push_back(
          MakeFinding("visibility", Severity::kInfo, std::nullopt,
                      fmt::format("the GPU at {} is passed to a virtual machine", p.address),
                      "bound to vfio-pci, not nvidia", "it is not this host's to use",
                      "nothing, unless it should be: unbind it from vfio-pci"));
      continue;
    }
    out->findings.push_back(MakeFinding(
        "visibility", Severity::kCritical, std::nullopt,
        fmt::format("the GPU at {} is on the PCI bus but not visible through NVML", p.address),
        fmt::format("{} NVIDIA GPUs in /sys/bus/pci, {} through NVML; {} has driver \"{}\"",
                    in.pci_gpus->size(), in.node_view.gpus.size(), p.address,
                    p.driver.empty() ? "none" : p.driver),
        p.driver.empty()
            ? "no driver is bound to it: the driver refused it at load (see dmesg) or it failed to "
              "initialize"
            : "the driver holds it but cannot use it (fallen off the bus, or failed to initialize)",
        "read `dmesg | grep -i nvrm` for why; reset the GPU or reboot; RMA if it stays missing"));
  }
}

void CheckThrottle(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    int i = g.info.index;
    bool is_hot = false;  // Thermally throttled: one cause, one finding (not also "near its slowdown").
    auto it = in.throttle.find(i);
    if (it != in.throttle.end() && it->second.seconds > 0) {
      const ThrottleWindow& w = it->second;
      double thermal = Share(w.thermal_seconds, w.seconds);
      double hardware = Share(w.hardware_seconds, w.seconds);
      double power = Share(w.power_seconds, w.seconds);
      if (hardware >= 0.01) {
        out->findings.push_back(MakeFinding(
            "throttle", Severity::kCritical, i,
            fmt::format("gpu {} slowed by a hardware signal {:.0f} % of {}", i, hardware * 100, w.source),
            fmt::format("HW slowdown for {} of {}", Span(w.hardware_seconds), Span(w.seconds)),
            "the board cut its clocks on an external signal: a power supply that cannot deliver, or "
            "overheating "
            "seen by the board",
            "check the power supplies and cables and the chassis cooling; nvidia-smi -q -d PERFORMANCE shows "
            "the "
            "reason live"));
      }
      if (thermal >= 0.05) {
        is_hot = true;
        out->findings.push_back(MakeFinding(
            "throttle", Severity::kWarning, i,
            fmt::format("gpu {} thermally throttled {:.0f} % of {}", i, thermal * 100, w.source),
            fmt::format("thermal slowdown for {} of {}; now {}", Span(w.thermal_seconds), Span(w.seconds),
                        g.sample.temperature_celsius ? fmt::format("{:.0f} °C", *g.sample.temperature_celsius)
                                                     : std::string("temperature unknown")),
            "the GPU runs slower than it could because it is too hot",
            "check airflow, fan speeds, blanking panels and the inlet temperature; clean the heatsinks"));
      }
      if (power >= 0.25 && g.sample.utilization_gpu_ratio.value_or(0) > 0.5) {
        out->findings.push_back(MakeFinding(
            "throttle", Severity::kInfo, i,
            fmt::format("gpu {} at its power limit {:.0f} % of {}", i, power * 100, w.source),
            fmt::format("power cap or power brake for {} of {}", Span(w.power_seconds), Span(w.seconds)),
            "expected under heavy load: the GPU trades clock speed for staying within its power limit",
            "nothing, unless the limit was lowered (see power below)"));
      }
    }
    const node::GpuSample& s = g.sample;
    if (s.clock_event_reasons && (*s.clock_event_reasons & nvidia::kReasonApplicationsClocksSetting) &&
        s.utilization_gpu_ratio.value_or(0) >= 0.3) {
      out->findings.push_back(MakeFinding(
          "throttle", Severity::kWarning, i, fmt::format("gpu {} runs at pinned application clocks", i),
          fmt::format("clock event reason: applications clocks setting; SM clock {} MHz of {} MHz",
                      s.sm_clock_hertz ? *s.sm_clock_hertz / 1000000 : 0,
                      g.info.sm_clock_max_hertz ? *g.info.sm_clock_max_hertz / 1000000 : 0),
          "someone set application clocks (or locked them) below what the GPU could run: it computes slower",
          fmt::format("reset them: nvidia-smi -i {} -rac (and -rgc for locked clocks)", i)));
    }
    if (!is_hot && s.temperature_celsius && g.info.temperature_slowdown_celsius &&
        *g.info.temperature_slowdown_celsius - *s.temperature_celsius < 5) {
      out->findings.push_back(MakeFinding(
          "throttle", Severity::kWarning, i,
          fmt::format("gpu {} is within 5 °C of its slowdown temperature", i),
          fmt::format("{:.0f} °C, slowdown at {:.0f} °C", *s.temperature_celsius,
                      *g.info.temperature_slowdown_celsius),
          "a little more heat and the GPU will slow down", "improve cooling before the next heavy job"));
    }
    if (s.power_limit_milliwatts && g.info.power_limit_default_milliwatts &&
        *s.power_limit_milliwatts < *g.info.power_limit_default_milliwatts * 95 / 100) {
      out->findings.push_back(
          MakeFinding("throttle", Severity::kWarning, i, fmt::format("gpu {}'s power limit was lowered", i),
                      fmt::format("limit {} W, default {} W", *s.power_limit_milliwatts / 1000,
                                  *g.info.power_limit_default_milliwatts / 1000),
                      "the GPU cannot draw its rated power: it runs slower under load",
                      fmt::format("if not on purpose: nvidia-smi -i {} -pl {}", i,
                                  *g.info.power_limit_default_milliwatts / 1000)));
    }
  }
}

void CheckEcc(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    int i = g.info.index;
    const node::EccCounts& e = g.sample.ecc;
    if (e.volatile_uncorrected.value_or(0) > 0) {
      out->findings.push_back(MakeFinding(
          "ecc", Severity::kCritical, i,
          fmt::format("gpu {} had uncorrectable memory errors since its last reset", i),
          fmt::format("{} uncorrected (volatile), {} corrected", *e.volatile_uncorrected,
                      e.volatile_corrected.value_or(0)),
          "data in the GPU's memory was lost: results of the jobs that ran on it may be wrong",
          "drain the GPU and reset it (nvidia-smi -r) so the bad rows are remapped; RMA if it recurs"));
    } else if (e.aggregate_uncorrected.value_or(0) > 0) {
      out->findings.push_back(
          MakeFinding("ecc", Severity::kWarning, i,
                      fmt::format("gpu {} has had uncorrectable memory errors in its lifetime", i),
                      fmt::format("{} uncorrected (aggregate)", *e.aggregate_uncorrected),
                      "the board's memory has failed before; it may again",
                      "watch it: Xid 48/94/95 or new volatile errors mean a reset or an RMA"));
    }
    if (const std::optional<node::RetiredPages>& p = g.sample.retired_pages) {
      int64_t total = p->single_bit + p->double_bit;
      std::string evidence =
          fmt::format("{} pages retired for double-bit, {} for single-bit errors{}", p->double_bit,
                      p->single_bit, p->is_pending ? "; a retirement is pending" : "");
      if (total >= kRetiredPagesLimit) {
        out->findings.push_back(MakeFinding(
            "ecc", Severity::kCritical, i, fmt::format("gpu {} has retired {} memory pages", i, total),
            evidence,
            "the board is at the end of its page retirement budget: further errors cannot be retired",
            "take the GPU out of service and RMA it"));
      } else if (p->is_pending) {
        out->findings.push_back(MakeFinding(
            "ecc", Severity::kWarning, i, fmt::format("gpu {}: a page retirement waits for a reset", i),
            evidence, "memory with errors stays in use until the GPU is reset",
            fmt::format("reset the GPU when it is free: nvidia-smi -r -i {}", i)));
      }
    }
    if (const std::optional<node::RemappedRows>& r = g.sample.remapped_rows) {
      if (r->has_failure) {
        out->findings.push_back(
            MakeFinding("ecc", Severity::kCritical, i, fmt::format("gpu {}: row remapping failed", i),
                        fmt::format("{} rows remapped for uncorrectable, {} for correctable errors",
                                    r->uncorrected, r->corrected),
                        "the GPU has no spare memory rows left for the failing ones",
                        "take the GPU out of service and RMA it"));
      } else if (r->is_pending) {
        out->findings.push_back(MakeFinding(
            "ecc", Severity::kWarning, i, fmt::format("gpu {}: a row remapping waits for a reset", i),
            fmt::format("{} rows remapped for uncorrectable, {} for correctable errors", r->uncorrected,
                        r->corrected),
            "memory with errors stays in use until the GPU is reset",
            fmt::format("reset the GPU when it is free: nvidia-smi -r -i {}", i)));
      }
    }
  }
}

void CheckXid(const DoctorInputs& in, CheckOutput* out) {
  // GPU index by PCI address (the kernel log's domain:bus:device form).
  std::map<std::string, int> by_pci;
  for (const node::GpuView& g : in.node_view.gpus)
    by_pci[NormalizePciAddress(g.info.pci_bus_id, false)] = g.info.index;
  struct Seen {
    int64_t count = 0;
    std::string last_line;
  };
  std::map<std::pair<std::string, int64_t>, Seen> seen;  // (pci, xid)
  int older = 0;
  for (const KernelXid& x : in.kernel_xids) {
    if (in.uptime_seconds && x.seconds_since_boot &&
        *in.uptime_seconds - *x.seconds_since_boot > kXidMaxAgeSeconds) {
      ++older;  // Before the last day: a past problem, likely dealt with since.
      continue;
    }
    Seen& s = seen[{x.pci, x.xid}];
    ++s.count;
    s.last_line = x.line;
  }
  auto report = [&](std::optional<int> gpu, const std::string& where, int64_t xid, int64_t count,
                    const std::string& evidence) {
    nvidia::XidMeaning m = nvidia::LookUpXid(xid);
    Severity severity = m.gravity == nvidia::XidGravity::kCritical ? Severity::kCritical
                        : m.gravity == nvidia::XidGravity::kInfo   ? Severity::kInfo
                                                                   : Severity::kWarning;
    out->findings.push_back(
        MakeFinding("xid", severity, gpu,
                    fmt::format("{}: Xid {} ({}){}", where, xid, m.name,
                                count > 1 ? fmt::format(", {} times", count) : std::string()),
                    evidence, m.meaning, m.action));
  };
  for (const auto& [key, s] : seen) {
    auto it = by_pci.find(key.first);
    std::optional<int> gpu = it == by_pci.end() ? std::nullopt : std::optional<int>(it->second);
    report(gpu, gpu ? fmt::format("gpu {}", *gpu) : fmt::format("PCI {}", key.first), key.second, s.count,
           "kernel log: " + s.last_line);
  }
  if (older > 0) {
    out->findings.push_back(MakeFinding(
        "xid", Severity::kInfo, std::nullopt,
        fmt::format("{} Xid line{} older than a day in the kernel log", older, older == 1 ? "" : "s"),
        "dmesg | grep Xid shows them", "past errors, likely dealt with since",
        "nothing, unless the same GPU keeps showing them"));
  }
  if (!in.kernel_log_error.empty()) {
    // The agent's own count since it started stands in for the kernel log.
    bool any = false;
    for (const node::GpuView& g : in.node_view.gpus) {
      for (const auto& [xid, count] : g.xid_count_by_code) {
        any = true;
        report(g.info.index, fmt::format("gpu {}", g.info.index), xid, count,
               fmt::format("seen by the agent's NVML events since it started ({} in all)", g.xid_count));
      }
      for (const auto& [xid, count] : g.earlier_xid_count_by_code) {
        if (g.xid_count_by_code.count(xid) != 0) continue;  // Said above.
        any = true;
        report(g.info.index, fmt::format("gpu {}", g.info.index), xid, count,
               "logged before the agent restarted, since the host booted (the history)");
      }
    }
    out->skipped.push_back(
        {"xid", in.kernel_log_error +
                    (any || !in.through_agent ? std::string() : "; the agent saw no Xid since it started")});
  }
}

void CheckPersistence(const DoctorInputs& in, CheckOutput* out) {
  std::vector<int> off;
  for (const node::GpuView& g : in.node_view.gpus) {
    if (g.info.is_persistence_mode_enabled == false) off.push_back(g.info.index);
  }
  if (off.empty()) return;
  out->findings.push_back(
      MakeFinding("persistence", Severity::kWarning, std::nullopt,
                  fmt::format("persistence mode is off on {} GPU{}", off.size(), off.size() == 1 ? "" : "s"),
                  fmt::format("gpus {}", fmt::join(off, ", ")),
                  "the driver tears the GPUs down when no process uses them: every job start pays "
                  "seconds of re-initialization, and monitoring wakes them",
                  "run nvidia-persistenced (systemctl enable --now nvidia-persistenced), or "
                  "nvidia-smi -pm 1"));
}

void CheckSharing(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    // By device: the GPU, or under MIG each instance (processes in two
    // instances of one GPU do not share anything a process can compete for).
    std::map<std::optional<int>, int> compute;
    for (const node::ProcessView& p : g.processes) {
      if (p.process.type != node::ProcessType::kGraphics) ++compute[p.process.gpu_instance_id];
    }
    for (const auto& [instance, n] : compute) {
      if (n < 2) continue;
      std::optional<int64_t> used_bytes = g.sample.memory_used_bytes;
      std::optional<int64_t> total_bytes = g.sample.memory_total_bytes;
      std::string device = fmt::format("gpu {}", g.info.index);
      if (instance) {
        const node::MigInstance* m = node::FindMigInstance(g.sample, *instance);
        used_bytes = m != nullptr ? m->memory_used_bytes : std::nullopt;
        total_bytes = m != nullptr ? m->memory_total_bytes : std::nullopt;
        device += fmt::format(" MIG {} (GPU instance {})", m != nullptr ? m->profile : "?", *instance);
      }
      double used = used_bytes && total_bytes && *total_bytes > 0
                        ? static_cast<double>(*used_bytes) / static_cast<double>(*total_bytes)
                        : 0;
      out->findings.push_back(
          MakeFinding("sharing", used >= 0.9 ? Severity::kWarning : Severity::kInfo, g.info.index,
                      fmt::format("{} is shared by {} processes", device, n),
                      fmt::format("{} compute processes, memory {:.0f} % used", n, used * 100),
                      "processes sharing a GPU compete for its memory: allocations fragment and a job can "
                      "run out of memory "
                      "with memory apparently free; each also runs slower",
                      "give each job its own GPU (tarmac run), or MIG instances for small ones"));
    }
  }
}

void CheckHeldIdle(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    std::vector<int64_t> pids = node::MarkGpu(g).idle_holding_pids;
    if (pids.empty()) continue;
    out->findings.push_back(
        MakeFinding("held_idle", Severity::kWarning, g.info.index,
                    fmt::format("gpu {}: {} {} memory without computing", g.info.index, pids.size(),
                                pids.size() == 1 ? "process holds" : "processes hold"),
                    fmt::format("pids {} at 0 % SM", fmt::join(pids, ", ")),
                    "the GPU looks taken but does no work: a notebook or a finished job kept its memory",
                    "see `tarmac zombies`; ask the owner, or end it (tarmac zombies --kill)"));
  }
}

}  // namespace tarmac::doctor
