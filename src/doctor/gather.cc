// SPDX-License-Identifier: Apache-2.0
#include "doctor/gather.h"

#include <fmt/format.h>
#include <unistd.h>

#include "common/host_name.h"
#include "common/proc_files.h"
#include "common/run_program.h"
#include "common/units.h"
#include "doctor/host_readings.h"
#include "store/usage_query.h"

namespace tarmac::doctor {
namespace {

// This boot's kernel messages from the journal ("[ 123.456789] host kernel:
// ..." lines, seconds since boot as /dev/kmsg counts them), when /dev/kmsg
// is refused; only on the machine itself (not under another root).
std::optional<std::string> KernelJournal(const HostFiles& host) {
  if (host.root() != "/") return std::nullopt;
  Result<std::pair<std::string, int>> ran = RunProgram(
      {"journalctl", "-k", "-b", "-o", "short-monotonic", "--no-pager", "-q"}, std::chrono::seconds(10));
  if (!ran.ok() || ran.value().second != 0 || ran.value().first.empty()) return std::nullopt;
  return ran.value().first;
}

}  // namespace

void FillInputs(const HostFiles& host, InputSources sources, DoctorInputs* in) {
  in->node_view = std::move(sources.node_view);
  in->hostname = in->node_view.hostname.empty() ? HostName() : in->node_view.hostname;
  in->through_agent = sources.through_agent;
  in->is_root = ::geteuid() == 0;
  in->gpu_error = !sources.gpu_error.empty() ? sources.gpu_error : in->node_view.backend_error;
  if (sources.history != nullptr) {
    in->throttle = ThrottleFromHistory(sources.history, sources.now_unix);
    in->mig_empty_seconds = MigEmptyFromHistory(sources.history, sources.now_unix);
  }
  if (sources.stat_before && sources.stat_after) {
    in->cpu = CompareCpuTimes(ParseCpuTimes(*sources.stat_before), ParseCpuTimes(*sources.stat_after));
  }
  GatherHost(host, sources.gather, in);
  // Each GPU process's CPU time over the window, as a number of CPUs.
  for (auto& [pid, facts] : in->processes) {
    auto before = sources.process_stats_before.find(pid);
    auto after = sources.process_stats_after.find(pid);
    if (!in->cpu || in->cpu->ticks <= 0 || before == sources.process_stats_before.end() ||
        after == sources.process_stats_after.end())
      continue;
    std::optional<ProcStat> was = ParseProcStat(before->second);
    std::optional<ProcStat> now = ParseProcStat(after->second);
    // The same process at both ends (a PID reused between them is another).
    if (!was || !now || was->start_ticks != now->start_ticks || now->cpu_ticks < was->cpu_ticks) continue;
    facts.busy_cpus = static_cast<double>(now->cpu_ticks - was->cpu_ticks) / in->cpu->ticks;
  }
}

std::map<int64_t, std::string> ReadProcessStats(const HostFiles& host, const node::NodeView& node_view) {
  std::map<int64_t, std::string> out;
  for (const node::GpuView& g : node_view.gpus) {
    for (const node::ProcessView& p : g.processes) {
      if (out.count(p.process.pid)) continue;
      if (std::optional<std::string> stat = host.Read(fmt::format("/proc/{}/stat", p.process.pid), 4096))
        out[p.process.pid] = std::move(*stat);
    }
  }
  return out;
}

void GatherHost(const HostFiles& host, const GatherOptions& options, DoctorInputs* in) {
  if (std::optional<std::string> meminfo = host.Read("/proc/meminfo")) in->memory = ParseMemInfo(*meminfo);
  if (std::optional<std::string> uptime = host.Read("/proc/uptime", 256)) {
    try {
      in->uptime_seconds = std::stod(*uptime);
    } catch (const std::exception&) {
      in->uptime_seconds.reset();
    }
  }
  if (options.wants_kernel_log) {
    Result<std::string> log = host.KernelLog();
    if (log.ok()) {
      in->kernel_xids = ParseKernelXids(log.value());
    } else if (std::optional<std::string> journal = KernelJournal(host)) {
      in->kernel_xids = ParseKernelXids(*journal);  // A member of systemd-journal or adm may read it.
    } else {
      in->kernel_log_error = "the kernel log could not be read: " + log.status().message();
    }
  }
  if (!host.List("/sys/bus/pci/devices").empty()) in->pci_gpus = ScanPciGpus(host);
  for (const node::GpuView& g : in->node_view.gpus) {
    for (const node::ProcessView& p : g.processes)
      in->processes[p.process.pid] = ReadProcessFacts(host, p.process.pid);
  }
  if (options.wants_containers) in->containers = ReadContainerFacts(host);
}

std::map<int, ThrottleWindow> ThrottleFromHistory(store::Db* db, int64_t now_unix) {
  std::map<int, ThrottleWindow> out;
  int64_t now_minute = now_unix / 60;
  Result<std::vector<store::RecentThrottle>> rows =
      store::QueryRecentThrottle(db, now_minute - 60, now_minute + 1);
  if (!rows.ok()) return out;
  for (const store::RecentThrottle& r : rows.value()) {
    if (r.covered_seconds <= 0) continue;
    ThrottleWindow w;
    w.seconds = static_cast<double>(r.covered_seconds);
    w.thermal_seconds = static_cast<double>(r.thermal_seconds);
    w.power_seconds = static_cast<double>(r.power_seconds);
    w.hardware_seconds = static_cast<double>(r.other_seconds);
    // What the ratio was measured over: the whole hour only when history
    // covers it (an agent that started minutes ago does not).
    w.source = r.covered_seconds >= 3540
                   ? "the last hour"
                   : fmt::format("the {} of history in the last hour",
                                 FormatDuration(std::chrono::seconds(r.covered_seconds)));
    out[r.index] = w;
  }
  return out;
}

std::map<std::string, int64_t> MigEmptyFromHistory(store::Db* db, int64_t now_unix) {
  std::map<std::string, int64_t> out;
  Result<std::vector<store::MigInstanceUse>> rows = store::QueryMigInstanceUse(db);
  if (!rows.ok()) return out;
  for (const store::MigInstanceUse& u : rows.value()) {
    out[u.uuid] = std::max<int64_t>(0, now_unix - u.last_process_seen.value_or(u.first_seen));
  }
  return out;
}

}  // namespace tarmac::doctor
