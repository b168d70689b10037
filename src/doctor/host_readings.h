// SPDX-License-Identifier: Apache-2.0
//
// Readings of the host the doctor judges, parsed from its files: CPU times
// (/proc/stat) and their change over a window, memory (/proc/meminfo), Xid
// lines of the kernel log, the NVIDIA GPUs on the PCI bus (/sys), and what
// a GPU process may use (/proc/<pid>/status and environ). The parsers take
// text and never fail: what they cannot read they leave out (each has a
// fuzz target, fuzz/doctor_host_fuzzer.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/host_files.h"

namespace tarmac::doctor {

// One "cpu" or "cpuN" line of /proc/stat, in clock ticks.
struct CpuTimes {
  int cpu = -1;  // -1: the "cpu" line (all CPUs).
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  int64_t Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  int64_t Busy() const { return user + nice + system + irq + softirq; }
};
std::vector<CpuTimes> ParseCpuTimes(std::string_view proc_stat);

// The CPUs over a window between two readings of /proc/stat.
struct CpuWindow {
  int cpu_count = 0;
  double busy_ratio = 0;  // All CPUs: time not idle, iowait or stolen.
  double iowait_ratio = 0;
  double steal_ratio = 0;
  int hottest_cpu = -1;
  double hottest_busy_ratio = 0;
  int saturated_cpus = 0;  // Busy 95 % or more.
  // The window's length in clock ticks (of one CPU): what a process's CPU
  // ticks over the same window are a share of.
  double ticks = 0;
};
// Empty when the readings hold no common CPUs or no time passed.
std::optional<CpuWindow> CompareCpuTimes(const std::vector<CpuTimes>& before,
                                         const std::vector<CpuTimes>& after);

// /proc/meminfo, in KiB (hugepages in pages).
struct MemInfo {
  std::optional<int64_t> total_kib;
  std::optional<int64_t> available_kib;
  std::optional<int64_t> swap_total_kib;
  std::optional<int64_t> swap_free_kib;
  std::optional<int64_t> hugepages_total;
  std::optional<int64_t> hugepages_free;
  std::optional<int64_t> hugepage_size_kib;
};
MemInfo ParseMemInfo(std::string_view text);

// One Xid line of the kernel log ("NVRM: Xid (PCI:0000:18:00): 79, pid=..,
// GPU has fallen off the bus."), as /dev/kmsg or dmesg prints it.
struct KernelXid {
  std::string pci;  // "0000:18:00" (domain:bus:device, lower case)
  int64_t xid = 0;
  std::optional<double> seconds_since_boot;
  std::string line;  // The message, trimmed.
};
std::vector<KernelXid> ParseKernelXids(std::string_view log);

// An NVIDIA display or 3D controller function on the PCI bus.
struct PciGpu {
  std::string address;  // "0000:18:00.0" (lower case)
  std::string driver;   // "nvidia", "vfio-pci", or "" when none is bound
  std::optional<int> numa_node;
  std::optional<double> link_speed_gts;  // Current, GT/s.
  std::optional<double> max_link_speed_gts;
  std::optional<int> link_width;
  std::optional<int> max_link_width;
};
std::vector<PciGpu> ScanPciGpus(const HostFiles& host);

// "00000000:18:00.0" (NVML) or "0000:18:00.0" (sysfs) to "0000:18:00.0";
// with `with_function` false, "0000:18:00" (the kernel log's form).
std::string NormalizePciAddress(std::string_view address, bool with_function = true);

// What a process on a GPU may use, from /proc/<pid> (empty fields: not
// readable, e.g. another user's environment without root).
struct ProcessFacts {
  std::optional<std::string> cpus_allowed;          // "0-31,64-95"
  std::optional<std::string> cuda_visible_devices;  // Set in its environment.
  bool is_environment_readable = false;
  // CPUs its cgroup may use (the tightest cpu.max, or v1 CFS quota, on the
  // way up its cgroup path); empty: no limit.
  std::optional<double> cpu_limit;
  std::string cgroup;  // Its cgroup path (v2, or v1's cpu controller).
  // cgroup v1's devices.list of its cgroup ("c 195:0 rwm", "a *:* rwm");
  // empty under cgroup v2, which keeps device rules in eBPF programs.
  std::optional<std::vector<std::string>> device_rules;
  // CPU time it used over the window, in CPUs (1.0: one CPU all the time);
  // empty when /proc/<pid>/stat was not read at both ends.
  std::optional<double> busy_cpus;
};
ProcessFacts ReadProcessFacts(const HostFiles& host, int64_t pid);

// The container runtime's ability to hand a GPU to a container.
struct ContainerFacts {
  std::vector<std::string> runtimes;  // "docker", "containerd", "podman" (binaries found).
  bool has_nvidia_toolkit = false;    // nvidia-container-runtime or nvidia-ctk.
  std::vector<std::string>
      configured_for;  // Runtimes whose configuration names the NVIDIA runtime, or "cdi".
};

// The container runtimes installed and whether they can hand out GPUs:
// binaries in /usr/bin, /usr/local/bin, /usr/sbin, /bin; the NVIDIA runtime
// named in /etc/docker/daemon.json or /etc/containerd/config.toml; a CDI
// spec in /etc/cdi or /var/run/cdi.
ContainerFacts ReadContainerFacts(const HostFiles& host);

}  // namespace tarmac::doctor
