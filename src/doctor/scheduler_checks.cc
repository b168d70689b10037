// SPDX-License-Identifier: Apache-2.0
//
// Question 4: is the scheduler telling the truth?
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "common/split.h"
#include "doctor/checks.h"
#include "node/gpu_marks.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::doctor {
namespace {

bool IsNumber(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

enum class Visible { kYes, kNo, kByIndexOnly };

// Whether cgroup v1 device rules let every NVIDIA GPU (character major 195)
// be opened: "a" (all), or a rule for every character device or every
// minor of 195.
bool AllowsEveryGpu(const std::vector<std::string>& rules) {
  for (const std::string& r : rules) {
    if (r == "a" || r.rfind("a *:*", 0) == 0 || r.rfind("c *:*", 0) == 0 ||
        r.rfind(std::string(nvidia::kDeviceRulePrefix) + "*", 0) == 0)
      return true;
  }
  return false;
}

// Whether CUDA_VISIBLE_DEVICES=`list` lets `process` use `gpu`: UUIDs (or
// their prefixes, as CUDA accepts) decide; bare indices are CUDA's order,
// which matches NVML's only with CUDA_DEVICE_ORDER=PCI_BUS_ID. Under MIG,
// a MIG- UUID names the instance the process runs in.
Visible IsVisible(const std::string& list, const node::GpuView& gpu, const node::ProcessView& process) {
  bool has_index = false;
  const node::MigInstance* instance =
      process.process.gpu_instance_id ? node::FindMigInstance(gpu.sample, *process.process.gpu_instance_id)
                                      : nullptr;
  for (const std::string& t : SplitCommas(list)) {
    if (nvidia::IsMigUuid(t)) {
      if (instance != nullptr && instance->uuid.rfind(t, 0) == 0) return Visible::kYes;
    } else if (IsNumber(t)) {
      has_index = true;
      if (std::stoi(t.substr(0, 6)) == gpu.info.index) return Visible::kYes;
    } else if (!gpu.info.uuid.empty() && gpu.info.uuid.rfind(t, 0) == 0) {
      return Visible::kYes;
    }
  }
  return has_index ? Visible::kByIndexOnly : Visible::kNo;
}

}  // namespace

void CheckAllocation(const DoctorInputs& in, CheckOutput* out) {
  int unreadable = 0;
  // Processes whose cgroup lets them open every GPU: one cause, one finding.
  struct OpensEvery {
    std::string who;
    int gpu = 0;
    std::string evidence;  // Its device rules and visible GPUs.
    std::string command;
  };
  std::map<int64_t, OpensEvery> opens_every;
  for (const node::GpuView& g : in.node_view.gpus) {
    int i = g.info.index;
    for (const node::ProcessView& p : g.processes) {
      int64_t pid = p.process.pid;
      // By its name: the command line (which may hold a secret) goes in
      // the finding's `command` only.
      std::string who = fmt::format("pid {} ({}, {})", pid, p.details.user.empty() ? "?" : p.details.user,
                                    p.details.name.empty() ? "?" : p.details.name);
      const size_t found_before = out->findings.size();
      auto it = in.processes.find(pid);
      if (it != in.processes.end() && it->second.cuda_visible_devices && it->second.device_rules &&
          AllowsEveryGpu(*it->second.device_rules)) {
        size_t allocated = SplitCommas(*it->second.cuda_visible_devices).size();
        if (allocated < in.node_view.gpus.size() && opens_every.count(pid) == 0) {
          opens_every[pid] = {
              who, i,
              fmt::format("devices.list {}; CUDA_VISIBLE_DEVICES names {} of {} GPUs",
                          fmt::join(*it->second.device_rules, "; "), allocated, in.node_view.gpus.size()),
              p.details.command};
        }
      }
      if (it != in.processes.end() && it->second.cuda_visible_devices) {
        const std::string& list = *it->second.cuda_visible_devices;
        Visible v = IsVisible(list, g, p);
        if (v != Visible::kYes) {
          out->findings.push_back(MakeFinding(
              "allocation", v == Visible::kNo ? Severity::kCritical : Severity::kWarning, i,
              fmt::format("{} runs on gpu {}, outside its CUDA_VISIBLE_DEVICES", who, i),
              fmt::format("{}={}; gpu {} is {}", nvidia::kVisibleDevicesVariable, list, i, g.info.uuid),
              v == Visible::kNo
                  ? "an invisible neighbour: the process uses a GPU its allocation does not include, so the "
                    "scheduler counts that GPU free or someone else's"
                  : "the process uses a GPU its allocation names only by index: CUDA numbers GPUs fastest "
                    "first "
                    "unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so the index may mean another GPU",
              v == Visible::kNo
                  ? "find how it escaped (a reset environment, a child that cleared it, a container "
                    "without device isolation) and stop it; allocate GPUs by UUID (tarmac run does)"
                  : "set CUDA_DEVICE_ORDER=PCI_BUS_ID or allocate by UUID (tarmac run does)"));
        }
      } else if (it == in.processes.end() || !it->second.is_environment_readable) {
        ++unreadable;
      }
      for (size_t f = found_before; f < out->findings.size(); ++f)
        out->findings[f].command = p.details.command;
      if (g.lease && !g.lease->user.empty() && p.details.exists && p.details.user != g.lease->user &&
          p.details.uid != 0) {
        out->findings.push_back(MakeFinding(
            "allocation", Severity::kWarning, i,
            fmt::format("{} runs on gpu {}, leased to {}", who, i, g.lease->user),
            fmt::format("lease {} ({}{}) holds gpu {}", g.lease->id, g.lease->user,
                        g.lease->is_backfill() ? ", backfill" : "", i),
            "another user's process shares a leased GPU: the lease holder's job slows down or runs out of "
            "memory",
            "ask the process's owner to use tarmac run; [leases] foreign_policy = \"terminate\" ends such "
            "processes"));
      }
    }
  }
  if (!opens_every.empty()) {
    // The processes with the same rules in one list: "pid 1 (...), pid 2
    // (...): devices.list ...".
    std::map<std::string, std::vector<std::string>> who_by_rules;
    for (const auto& [pid, o] : opens_every) who_by_rules[o.evidence].push_back(o.who);
    std::vector<std::string> evidence;
    for (const auto& [rules, who] : who_by_rules)
      evidence.push_back(fmt::format("{}: {}", fmt::join(who, ", "), rules));
    const OpensEvery& first = opens_every.begin()->second;
    bool is_one = opens_every.size() == 1;
    out->findings.push_back(MakeFinding(
        "allocation", Severity::kWarning, is_one ? std::optional<int>(first.gpu) : std::nullopt,
        is_one ? fmt::format("{} may open every GPU: its cgroup's device rules allow them all", first.who)
               : fmt::format("{} processes may open every GPU: their cgroups' device rules allow them all",
                             opens_every.size()),
        fmt::format("{}", fmt::join(evidence, "; ")),
        "nothing but an environment variable keeps them on their GPUs: a child that resets it, or a library "
        "that ignores it, lands on someone else's GPU",
        "constrain the jobs' devices (Slurm ConstrainDevices=yes in cgroup.conf, the container runtime's "
        "device list)"));
    if (is_one) out->findings.back().command = first.command;
  }
  if (unreadable > 0) {
    out->skipped.push_back(
        {"allocation",
         fmt::format("the environment of {} GPU process{} could not be read{}", unreadable,
                     unreadable == 1 ? "" : "es", in.is_root ? "" : " (another user's: run as root)")});
  }
}

void CheckCpuLimits(const DoctorInputs& in, CheckOutput* out) {
  std::map<int64_t, std::vector<int>> gpus_of;  // pid -> the GPUs it holds
  std::map<int64_t, const node::ProcessView*> view_of;
  for (const node::GpuView& g : in.node_view.gpus) {
    for (const node::ProcessView& p : g.processes) {
      gpus_of[p.process.pid].push_back(g.info.index);
      view_of[p.process.pid] = &p;
    }
  }
  for (const auto& [pid, gpus] : gpus_of) {
    auto it = in.processes.find(pid);
    if (it == in.processes.end() || !it->second.cpu_limit) continue;
    double cpus = *it->second.cpu_limit;
    if (cpus >= static_cast<double>(gpus.size())) continue;
    const node::ProcessView& p = *view_of[pid];
    out->findings.push_back(MakeFinding(
        "cpu_limit", Severity::kWarning, gpus.front(),
        fmt::format("pid {} ({}) drives {} GPU{} on {:.2g} CPU{}", pid,
                    p.details.name.empty() ? "?" : p.details.name, gpus.size(), gpus.size() == 1 ? "" : "s",
                    cpus, cpus == 1 ? "" : "s"),
        fmt::format("cgroup {} may use {:.2g} CPUs; gpus {}", it->second.cgroup, cpus, fmt::join(gpus, ", ")),
        "its container, pod or job is limited to less than one CPU per GPU: the data pipeline and the CUDA "
        "launch "
        "thread cannot keep the GPU busy",
        "give the job more CPUs (resources.limits.cpu for a pod, --cpus-per-gpu in Slurm, --cpus for "
        "docker)"));
    out->findings.back().command = p.details.command;
  }
}

void CheckMig(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    if (!g.info.is_mig_pending.value_or(false)) continue;
    bool is_on = g.info.is_mig_enabled.value_or(false);
    out->findings.push_back(MakeFinding(
        "mig", Severity::kWarning, g.info.index,
        fmt::format("gpu {}: MIG mode is {} until the GPU is reset (a change to {} is pending)", g.info.index,
                    is_on ? "on" : "off", is_on ? "off" : "on"),
        fmt::format("MIG mode current {}, pending {}", is_on ? "enabled" : "disabled",
                    is_on ? "disabled" : "enabled"),
        "the GPU is not yet what the scheduler was told: instances it expects do not exist (or the whole GPU "
        "is "
        "split), so jobs land wrongly or fail to start",
        fmt::format(
            "drain the GPU and reset it (nvidia-smi -r -i {}), or undo the change (nvidia-smi -mig {} -i {})",
            g.info.index, is_on ? 1 : 0, g.info.index)));
  }
}

void CheckMigEmpty(const DoctorInputs& in, CheckOutput* out) {
  bool has_instances = false;
  for (const node::GpuView& g : in.node_view.gpus) {
    for (const node::MigInstance& m : g.sample.mig_instances) {
      has_instances = true;
      bool is_running = std::any_of(g.processes.begin(), g.processes.end(), [&](const node::ProcessView& p) {
        return p.process.gpu_instance_id == m.gpu_instance_id;
      });
      auto empty = in.mig_empty_seconds.find(m.uuid);
      if (is_running || empty == in.mig_empty_seconds.end() || empty->second < kMigEmptyWarnSeconds) continue;
      double days = static_cast<double>(empty->second) / 86400;
      out->findings.push_back(MakeFinding(
          "mig_empty", Severity::kWarning, g.info.index,
          fmt::format("gpu {}: MIG instance {} (GPU instance {}) has run nothing for {:.1f} days",
                      g.info.index, m.profile, m.gpu_instance_id, days),
          fmt::format("{}: no process in the history since {:.1f} days", m.uuid, days),
          "a slice of the GPU is carved out for work that does not come: its compute and memory stand idle "
          "while "
          "other jobs wait for the profiles they need",
          fmt::format("lease it (tarmac run --mig {}), or reshape the GPU's layout to what jobs ask for "
                      "(nvidia-smi mig -dci, -dgi, then -cgi ... -C -i {})",
                      m.profile, g.info.index)));
    }
  }
  if (has_instances && in.mig_empty_seconds.empty()) {
    out->skipped.push_back(
        {"mig_empty",
         "no history of the MIG instances (the agent's store) to judge how long they sat empty"});
  }
}

void CheckContainers(const DoctorInputs& in, CheckOutput* out) {
  if (!in.containers) return;
  const ContainerFacts& c = *in.containers;
  if (c.runtimes.empty()) {
    out->skipped.push_back(
        {"containers", "no container runtime (docker, containerd, podman) on this machine"});
    return;
  }
  std::string runtimes = fmt::format("{}", fmt::join(c.runtimes, ", "));
  if (!c.has_nvidia_toolkit) {
    out->findings.push_back(
        MakeFinding("containers", Severity::kWarning, std::nullopt,
                    "containers cannot be given GPUs: no NVIDIA container toolkit",
                    fmt::format("found {}; no nvidia-container-runtime or nvidia-ctk", runtimes),
                    "`docker run --gpus` and Kubernetes pods asking for nvidia.com/gpu fail on this machine",
                    "install nvidia-container-toolkit and run nvidia-ctk runtime configure --runtime=docker "
                    "(or containerd)"));
    return;
  }
  if (c.configured_for.empty()) {
    out->findings.push_back(MakeFinding(
        "containers", Severity::kWarning, std::nullopt,
        "the NVIDIA container runtime is installed but not configured",
        fmt::format("found {} and the toolkit; no runtime configuration names nvidia, and no CDI spec",
                    runtimes),
        "containers start without GPUs",
        "nvidia-ctk runtime configure --runtime=docker (or containerd), then restart it; or generate a CDI "
        "spec "
        "(nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)"));
  }
}

}  // namespace tarmac::doctor
