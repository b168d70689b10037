// SPDX-License-Identifier: Apache-2.0
//
// Question 2: is the data pipeline feeding the GPUs?
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/units.h"
#include "doctor/checks.h"

namespace tarmac::doctor {

namespace {

// How a GPU's recent readings alternate between work and waiting.
struct Bursts {
  double peak = 0;  // The highest reading.
  double mean = 0;
  double duty_ratio = 0;  // Share of readings at half the peak or more.
  int bursts = 0;         // Rises from below half the peak to it.
};

Bursts BurstsOf(const std::vector<double>& values) {
  Bursts b;
  for (double v : values) {
    b.peak = std::max(b.peak, v);
    b.mean += v;
  }
  if (values.empty()) return b;
  b.mean /= static_cast<double>(values.size());
  double half = b.peak / 2;
  int busy = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    bool is_busy = values[i] >= half;
    busy += is_busy ? 1 : 0;
    if (i > 0 && is_busy && values[i - 1] < half) ++b.bursts;
  }
  b.duty_ratio = static_cast<double>(busy) / static_cast<double>(values.size());
  return b;
}

}  // namespace

namespace {

// A process on a GPU that kept a CPU's worth busy (or all the CPUs it may
// use) over the window while its GPU waited (under half utilized): its
// own CPU, not the GPU, sets the pace. "" when none.
std::string CpuBoundEvidence(const DoctorInputs& in, const node::GpuView& g, double gpu_ratio) {
  if (gpu_ratio >= kCpuBoundGpuRatio) return "";
  for (const node::ProcessView& p : g.processes) {
    auto facts = in.processes.find(p.process.pid);
    if (!node::IsCompute(p) || facts == in.processes.end() || !facts->second.busy_cpus) continue;
    double busy = *facts->second.busy_cpus;
    double limit = facts->second.cpu_limit.value_or(1.0);
    if (busy < kCpuBoundRatio * std::min(1.0, limit)) continue;
    return fmt::format(
        "pid {} ({}, {}) kept {:.2f} CPUs busy over the last {:.1f} s while gpu {} was {:.0f} % "
        "utilized",
        p.process.pid, p.details.user.empty() ? "?" : p.details.user, p.details.name, busy,
        in.cpu ? in.cpu->ticks / kTicksPerSecond : 0.0, g.info.index, gpu_ratio * 100);
  }
  return "";
}

constexpr const char* kStarvedMeaning =
    "between bursts the GPU waits for its next batch: the input pipeline (loading, decoding, augmentation, "
    "host-to-device copies) cannot keep up, and the GPU idles for the rest";
constexpr const char* kStarvedAction =
    "give the data loader more workers (num_workers) and prefetch (prefetch_factor), pin host memory "
    "(pin_memory=True) and copy asynchronously, move decoding to the GPU (DALI), or put the dataset on "
    "faster, local storage (tarmac doctor --storage PATH measures it)";

}  // namespace

void CheckStarved(const DoctorInputs& in, CheckOutput* out) {
  if (in.utilization_series.empty()) {
    out->skipped.push_back({"starved", in.through_agent ? "the agent keeps no utilization readings yet"
                                                        : "needs the agent (its readings over minutes)"});
  }
  bool has_enough = false;
  for (const node::GpuView& g : in.node_view.gpus) {
    const int index = g.info.index;
    std::string evidence;
    // Work that comes in bursts, idle between them, several times over:
    // the GPU waits for its input between batches. A steady job (duty near
    // 100 %), an idle GPU (no real peak) and one burst are not this.
    auto series = in.utilization_series.find(index);
    std::optional<double> mean = g.sample.utilization_gpu_ratio;
    if (series != in.utilization_series.end() && series->second.span_seconds >= kStarvedMinSpanSeconds &&
        series->second.values.size() >= 20) {
      has_enough = true;
      Bursts b = BurstsOf(series->second.values);
      mean = b.mean;
      if (b.peak >= 0.3 && b.duty_ratio >= 0.1 && b.duty_ratio <= 0.8 && b.bursts >= 2) {
        std::string span =
            FormatDuration(std::chrono::seconds(static_cast<int64_t>(series->second.span_seconds)));
        evidence = fmt::format(
            "bursts to {:.0f} % about every {:.0f} s, busy {:.0f} % of the time, mean {:.0f} % over the last "
            "{} ({} readings)",
            b.peak * 100, series->second.span_seconds / b.bursts, b.duty_ratio * 100, b.mean * 100, span,
            series->second.values.size());
      }
    }
    // A process whose CPU is saturated while its GPU waits: the same cause.
    std::string cpu = mean ? CpuBoundEvidence(in, g, *mean) : "";
    if (evidence.empty() && cpu.empty()) continue;
    out->findings.push_back(MakeFinding(
        "starved", Severity::kWarning, index,
        evidence.empty()
            ? fmt::format("gpu {} waits on its process's CPU: a data-starved job", index)
            : fmt::format("gpu {} works in bursts and waits between them: a data-starved job", index),
        evidence.empty() ? cpu
        : cpu.empty()    ? evidence
                         : evidence + "; " + cpu,
        kStarvedMeaning, kStarvedAction));
  }
  if (!in.utilization_series.empty() && !has_enough) {
    out->skipped.push_back({"starved", fmt::format("the agent's readings span less than {:.0f} s so far",
                                                   kStarvedMinSpanSeconds)});
  }
}

void CheckCpu(const DoctorInputs& in, CheckOutput* out) {
  if (!in.cpu) {
    out->skipped.push_back({"cpu", "/proc/stat could not be read twice"});
    return;
  }
  const CpuWindow& c = *in.cpu;
  if (c.busy_ratio >= 0.9) {
    out->findings.push_back(MakeFinding(
        "cpu", Severity::kWarning, std::nullopt,
        fmt::format("the CPUs are saturated ({:.0f} % busy)", c.busy_ratio * 100),
        fmt::format("{:.0f} % busy over {} CPUs, {} of them at 95 % or more", c.busy_ratio * 100, c.cpu_count,
                    c.saturated_cpus),
        "data loading, decoding and augmentation compete for CPU: the GPUs wait for their input",
        "find the busy processes (top -o %CPU); give data loaders fewer workers per GPU or more CPUs; move "
        "preprocessing to the GPU (DALI) or offline"));
  } else if (c.cpu_count >= 4 && c.hottest_busy_ratio >= 0.95 && c.busy_ratio < 0.5) {
    out->findings.push_back(MakeFinding(
        "cpu", Severity::kWarning, std::nullopt,
        fmt::format("CPU {} is saturated while the others idle", c.hottest_cpu),
        fmt::format("cpu{} {:.0f} % busy; all {} CPUs {:.0f} %", c.hottest_cpu, c.hottest_busy_ratio * 100,
                    c.cpu_count, c.busy_ratio * 100),
        "one thread does the feeding (a single-process data loader, the Python GIL, or interrupts pinned to "
        "one "
        "core): it caps how fast the GPUs get data",
        "use several data loader workers (num_workers), check the thread with top -H, spread interrupts "
        "(irqbalance)"));
  }
  if (c.steal_ratio >= 0.05) {
    out->findings.push_back(MakeFinding(
        "cpu", Severity::kWarning, std::nullopt,
        fmt::format("{:.0f} % of CPU time is stolen by the hypervisor", c.steal_ratio * 100),
        fmt::format("steal {:.1f} % over the window", c.steal_ratio * 100),
        "this virtual machine's CPUs are shared with other guests: feeding the GPUs slows down unpredictably",
        "ask for dedicated (pinned) vCPUs, or a bare-metal or larger instance"));
  }
  if (c.iowait_ratio >= 0.1) {
    out->findings.push_back(
        MakeFinding("cpu", Severity::kWarning, std::nullopt,
                    fmt::format("the CPUs wait on storage {:.0f} % of the time", c.iowait_ratio * 100),
                    fmt::format("iowait {:.1f} % over the window", c.iowait_ratio * 100),
                    "reads from disk or network storage are slow: data loaders block and the GPUs wait",
                    "measure the data path (fio --rw=randread --direct=1 in the dataset's folder); cache the "
                    "dataset on local NVMe; read larger "
                    "files (shards) in parallel"));
  }
}

void CheckMemory(const DoctorInputs& in, CheckOutput* out) {
  if (!in.memory || !in.memory->total_kib || !in.memory->available_kib || *in.memory->total_kib <= 0) {
    out->skipped.push_back({"memory", "/proc/meminfo could not be read"});
    return;
  }
  const MemInfo& m = *in.memory;
  double available = static_cast<double>(*m.available_kib) / static_cast<double>(*m.total_kib);
  if (available < 0.1) {
    out->findings.push_back(MakeFinding(
        "memory", available < 0.05 ? Severity::kCritical : Severity::kWarning, std::nullopt,
        fmt::format("only {:.0f} % of host memory is available", available * 100),
        fmt::format("{:.1f} GiB available of {:.1f} GiB", static_cast<double>(*m.available_kib) / (1 << 20),
                    static_cast<double>(*m.total_kib) / (1 << 20)),
        "data loaders and pinned buffers run short: the kernel reclaims page cache, swaps or kills a job "
        "(OOM)",
        "find the biggest users (ps aux --sort=-rss | head); fewer loader workers or smaller prefetch; more "
        "memory"));
  }
  if (m.swap_total_kib && m.swap_free_kib && *m.swap_total_kib > 0) {
    double used =
        static_cast<double>(*m.swap_total_kib - *m.swap_free_kib) / static_cast<double>(*m.swap_total_kib);
    if (used >= 0.1) {
      out->findings.push_back(MakeFinding(
          "memory", Severity::kWarning, std::nullopt, fmt::format("{:.0f} % of swap is in use", used * 100),
          fmt::format("{:.1f} GiB of {:.1f} GiB swap used",
                      static_cast<double>(*m.swap_total_kib - *m.swap_free_kib) / (1 << 20),
                      static_cast<double>(*m.swap_total_kib) / (1 << 20)),
          "memory was short enough to swap: anything touching swapped pages stalls, the GPUs with it",
          "reduce the memory jobs use on the host, or add memory; vmstat 1 shows whether it swaps now "
          "(si/so)"));
    }
  }
  if (m.hugepages_total && *m.hugepages_total > 0 && m.hugepages_free && *m.hugepages_free == 0) {
    out->findings.push_back(
        MakeFinding("memory", Severity::kInfo, std::nullopt, "every reserved huge page is in use",
                    fmt::format("{} huge pages of {} KiB, none free", *m.hugepages_total,
                                m.hugepage_size_kib.value_or(0)),
                    "a program that asks for more huge pages falls back to small ones, or fails",
                    "reserve more (vm.nr_hugepages) if jobs need them"));
  }
}

void CheckStorage(const DoctorInputs& in, CheckOutput* out) {
  if (!in.storage && in.storage_error.empty()) {
    out->is_not_asked = true;
    return;
  }
  if (!in.storage) {
    out->skipped.push_back({"storage", in.storage_error});
    return;
  }
  const StorageResult& s = *in.storage;
  std::string evidence = fmt::format(
      "{} MiB test file in {}: {:.0f} MB/s sequential read, {:.0f} random 4 KiB reads/s, {:.0f} MB/s write{}",
      s.bytes >> 20, s.path, s.sequential_read_mb_per_s, s.random_read_iops, s.write_mb_per_s,
      s.is_direct ? "" : " (buffered: the file system refuses direct I/O; the page cache was dropped)");
  if (s.sequential_read_mb_per_s < in.storage_expect_mb_per_s) {
    out->findings.push_back(
        MakeFinding("storage", Severity::kWarning, std::nullopt,
                    fmt::format("{} reads at {:.0f} MB/s, under the {:.0f} MB/s expected", s.path,
                                s.sequential_read_mb_per_s, in.storage_expect_mb_per_s),
                    evidence, "data loaders reading from here cannot keep the GPUs fed at full speed",
                    "stage the dataset on local NVMe (or in memory), read larger shards in parallel, or "
                    "cache decoded samples; "
                    "--storage-expect sets what your pipeline needs"));
    return;
  }
  out->findings.push_back(
      MakeFinding("storage", Severity::kInfo, std::nullopt,
                  fmt::format("{} reads at {:.0f} MB/s", s.path, s.sequential_read_mb_per_s), evidence,
                  "fast enough for the expected data rate", "nothing"));
}

void CheckNetwork(const DoctorInputs& in, CheckOutput* out) {
  if (!in.network && in.network_error.empty()) {
    out->is_not_asked = true;
    return;
  }
  if (!in.network && in.is_network_unreachable) {
    out->findings.push_back(MakeFinding(
        "network", Severity::kWarning, std::nullopt, "the iperf3 server cannot be reached", in.network_error,
        "nothing measured: the server is not running there, a firewall drops the port, or the path is down",
        "start `iperf3 -s` on the other end (port 5201 unless HOST:PORT says otherwise); check routes and "
        "firewalls"));
    return;
  }
  if (!in.network) {
    out->skipped.push_back({"network", in.network_error});
    return;
  }
  const NetworkResult& n = *in.network;
  std::string evidence = fmt::format("iperf3 to {}: {:.2f} Gb/s received, {:.2f} Gb/s sent, {} retransmits",
                                     n.server, n.receive_gbit_per_s, n.send_gbit_per_s, n.retransmits);
  if (n.receive_gbit_per_s < in.network_expect_gbit_per_s) {
    out->findings.push_back(
        MakeFinding("network", Severity::kWarning, std::nullopt,
                    fmt::format("the network to {} carries {:.2f} Gb/s, under the {:.0f} Gb/s expected",
                                n.server, n.receive_gbit_per_s, in.network_expect_gbit_per_s),
                    evidence, "data or gradients over this path arrive slower than the GPUs can use them",
                    "check the link speed (ethtool), MTU, retransmits and the path (a 1 Gb/s hop); "
                    "--network-expect sets what "
                    "your pipeline needs"));
    return;
  }
  out->findings.push_back(
      MakeFinding("network", Severity::kInfo, std::nullopt,
                  fmt::format("the network to {} carries {:.2f} Gb/s", n.server, n.receive_gbit_per_s),
                  evidence, "fast enough for the expected data rate", "nothing"));
}

}  // namespace tarmac::doctor
