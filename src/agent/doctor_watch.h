// SPDX-License-Identifier: Apache-2.0
//
// The doctor in the agent: every [doctor] interval, on a thread of its own,
// the checks of src/doctor (all but the topology matrix) over the agent's
// latest snapshot with its leases, throttling over the last hour of history,
// CPU time since the previous run, and the host's files. A warning or
// critical finding that appears is a "doctor_finding" event, one that goes
// a "doctor_cleared" event; /metrics counts the findings by check and
// severity (tarmac_doctor_finding); /health names the critical ones.
//
// Thread safety: Start/Stop from one thread; Counts, Problem and RunOnce
// from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "doctor/doctor_config.h"
#include "doctor/finding.h"
#include "node/agent_figures.h"
#include "node/lease_marks.h"
#include "node/snapshot.h"

namespace tarmac::agent {

struct DoctorWatchOptions {
  doctor::WatchOptions watch;
  std::string host_root = "/";
  std::string store_path;  // The history, read for throttling; "" or missing: none.
  std::function<std::shared_ptr<const node::Snapshot>()> latest;
  std::function<std::shared_ptr<const node::LeaseMarks>()> lease_marks;  // Who holds each GPU.
  // Records the events of one run ("doctor_finding", "doctor_cleared",
  // each with its detail) together: a reader sees all of a run or none.
  std::function<void(const std::vector<std::pair<std::string, std::string>>& kind_detail)> record_events;
};

class DoctorWatch {
 public:
  DoctorWatch(DoctorWatchOptions options, Clock* clock, Logger* logger);
  ~DoctorWatch() { Stop(); }
  DoctorWatch(const DoctorWatch&) = delete;
  DoctorWatch& operator=(const DoctorWatch&) = delete;

  // Runs the checks at once, then every interval (nothing when disabled).
  void Start();
  void Stop();

  // One run of the checks now; events for what changed since the last.
  void RunOnce() EXCLUDES(mu_);

  // Findings of the last run by (check, severity), every check listed
  // with warning and critical (0 when none); null before the first run.
  // Counted once per run: the same map until the next.
  std::shared_ptr<const node::AgentFigures::FindingCounts> Counts() const EXCLUDES(mu_);
  // "doctor: <summary>; ..." for the critical findings; "" when none.
  std::string Problem() const EXCLUDES(mu_);
  // The GPU indices the last run found critically failing.
  std::set<int> CriticalGpus() const EXCLUDES(mu_);
  int64_t runs() const EXCLUDES(mu_);
  // The warning and critical findings of the last run.
  std::vector<doctor::Finding> Findings() const EXCLUDES(mu_);

 private:
  void Loop(std::stop_token stop);

  DoctorWatchOptions options_;
  Clock* clock_;
  Logger* logger_;
  std::jthread thread_;
  std::condition_variable_any wake_;
  mutable Mutex mu_;
  std::vector<doctor::Finding> current_ GUARDED_BY(mu_);
  std::optional<std::string> last_stat_ GUARDED_BY(mu_);  // /proc/stat at the previous run.
  // The GPU processes' /proc/<pid>/stat at the previous run, by PID.
  std::map<int64_t, std::string> last_process_stats_ GUARDED_BY(mu_);
  int64_t runs_ GUARDED_BY(mu_) = 0;
  std::shared_ptr<const node::AgentFigures::FindingCounts> counts_ GUARDED_BY(mu_);  // Of current_.
};

}  // namespace tarmac::agent
