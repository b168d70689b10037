// SPDX-License-Identifier: Apache-2.0
#include "agent/doctor_watch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <set>

#include "common/clock.h"
#include "common/host_name.h"
#include "doctor/gather.h"
#include "doctor/playbook.h"
#include "store/schema.h"

namespace tarmac::agent {
namespace {

// What makes two runs' findings the same finding (the numbers in a
// summary change from run to run).
std::string KeyOf(const doctor::Finding& f) {
  return fmt::format("{}/{}/{}", f.check, f.gpu ? std::to_string(*f.gpu) : std::string("-"),
                     doctor::SeverityName(f.severity));
}

// One short line per finding: its severity, check and summary. The
// evidence and what to do are `tarmac doctor`'s to show.
std::string Detail(const doctor::Finding& f, size_t more) {
  std::string out = fmt::format("[{}] {}: {}", doctor::SeverityName(f.severity), f.check, f.summary);
  if (more > 0) out += fmt::format(" (and {} more like it)", more);
  return out;
}

// The findings grouped by key (check, GPU, severity), in order: one
// finding per process is one event per finding.
std::vector<std::pair<const doctor::Finding*, size_t>> Grouped(const std::vector<doctor::Finding>& findings) {
  std::vector<std::pair<const doctor::Finding*, size_t>> groups;
  std::map<std::string, size_t> at;
  for (const doctor::Finding& f : findings) {
    auto [it, is_new] = at.emplace(KeyOf(f), groups.size());
    if (is_new) {
      groups.emplace_back(&f, 0);
    } else {
      ++groups[it->second].second;
    }
  }
  return groups;
}

}  // namespace

DoctorWatch::DoctorWatch(DoctorWatchOptions options, Clock* clock, Logger* logger)
    : options_(std::move(options)), clock_(clock), logger_(logger) {}

void DoctorWatch::Start() {
  if (!options_.watch.is_enabled) return;
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void DoctorWatch::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void DoctorWatch::Loop(std::stop_token stop) {
  for (;;) {
    RunOnce();
    MutexLock lock(&mu_);
    lock.WaitUntil(wake_, stop, RealSteadyNow() + options_.watch.interval, [] { return false; });
    if (stop.stop_requested()) return;
  }
}

void DoctorWatch::RunOnce() {
  std::shared_ptr<const node::Snapshot> snapshot = options_.latest ? options_.latest() : nullptr;
  if (snapshot == nullptr) return;
  doctor::HostFiles host(options_.host_root);
  host.SetDeadline(clock_->SteadyNow() + std::chrono::seconds(10), clock_);  // As `tarmac doctor`.
  doctor::InputSources sources;
  sources.node_view = snapshot->node_view;
  sources.through_agent = true;
  if (options_.lease_marks) {
    if (std::shared_ptr<const node::LeaseMarks> marks = options_.lease_marks())
      node::ApplyLeaseMarks(*marks, &sources.node_view);
  }
  std::unique_ptr<store::Db> history;
  if (!options_.store_path.empty()) {
    if (Result<std::unique_ptr<store::Db>> db = store::OpenForReading(options_.store_path); db.ok())
      history = std::move(db).value();
  }
  sources.history = history.get();
  sources.now_unix = UnixSeconds(clock_->WallNow());
  sources.stat_after = host.Read("/proc/stat");
  sources.process_stats_after = doctor::ReadProcessStats(host, sources.node_view);
  {
    MutexLock lock(&mu_);
    sources.stat_before = last_stat_;
    last_stat_ = sources.stat_after;
    sources.process_stats_before = last_process_stats_;
    last_process_stats_ = sources.process_stats_after;
  }
  doctor::DoctorInputs in;
  doctor::FillInputs(host, std::move(sources), &in);
  doctor::DoctorResult result = doctor::RunPlaybook(in, doctor::Selection{{}, {"topology"}});
  std::vector<doctor::Finding> now;
  for (const doctor::Finding& f : result.findings) {
    if (f.severity >= doctor::Severity::kWarning) now.push_back(f);
  }
  std::vector<std::pair<std::string, std::string>> events;
  {
    MutexLock lock(&mu_);
    std::set<std::string> before;
    for (const doctor::Finding& f : current_) before.insert(KeyOf(f));
    std::set<std::string> after;
    for (const doctor::Finding& f : now) after.insert(KeyOf(f));
    for (const auto& [f, more] : Grouped(now)) {
      if (!before.count(KeyOf(*f))) events.emplace_back("doctor_finding", Detail(*f, more));
    }
    for (const auto& [f, more] : Grouped(current_)) {
      if (!after.count(KeyOf(*f))) events.emplace_back("doctor_cleared", Detail(*f, more));
    }
    current_ = std::move(now);
    ++runs_;
    auto counts = std::make_shared<node::AgentFigures::FindingCounts>();
    for (const doctor::CheckInfo& c : doctor::AllChecks()) {
      if (std::string(c.name) == "topology") continue;
      (*counts)[{c.name, "warning"}] = 0;
      (*counts)[{c.name, "critical"}] = 0;
    }
    for (const doctor::Finding& f : current_) ++(*counts)[{f.check, doctor::SeverityName(f.severity)}];
    counts_ = std::move(counts);
  }
  for (const auto& [kind, detail] : events) {
    logger_->Log(kind == "doctor_finding" ? LogLevel::kWarning : LogLevel::kInfo, "doctor: {}: {}", kind,
                 detail);
  }
  if (options_.record_events && !events.empty()) options_.record_events(events);
}

std::shared_ptr<const node::AgentFigures::FindingCounts> DoctorWatch::Counts() const {
  MutexLock lock(&mu_);
  return counts_;
}

std::string DoctorWatch::Problem() const {
  MutexLock lock(&mu_);
  std::string out;
  for (const doctor::Finding& f : current_) {
    if (f.severity != doctor::Severity::kCritical) continue;
    out += (out.empty() ? "doctor: " : "; ") + f.summary;
  }
  return out;
}

std::set<int> DoctorWatch::CriticalGpus() const {
  MutexLock lock(&mu_);
  std::set<int> gpus;
  for (const doctor::Finding& f : current_) {
    if (f.severity == doctor::Severity::kCritical && f.gpu) gpus.insert(*f.gpu);
  }
  return gpus;
}

std::vector<doctor::Finding> DoctorWatch::Findings() const {
  MutexLock lock(&mu_);
  return current_;
}

int64_t DoctorWatch::runs() const {
  MutexLock lock(&mu_);
  return runs_;
}

}  // namespace tarmac::agent
