// SPDX-License-Identifier: Apache-2.0
//
// The agent's backfill batches (docs/backfill.md): the backfill.* methods
// of the local API and a runner process per active batch.
//
//  - Each step is an event (`tarmac events`): batch_submitted,
//    batch_paused, batch_resumed, batch_cancelled, batch_done,
//    batch_failed, batch_runner_restarted.
//  - backfill.submit keeps a batch in <state>/backfill/<id>/batch.json, in a
//    folder only the agent may write (docs/security.md): the caller's
//    identity (SO_PEERCRED), command and paths are never read back from a
//    file the user can write. <id>/work/ is the user's (the runner's lock,
//    its own progress, engine logs); the agent never opens anything there.
//  - The runner reports its progress over the socket (backfill.progress,
//    taken only from that runner's PID and the batch's uid); the agent
//    keeps it in memory and in its own <id>/progress.json. list and get
//    show every batch with it; pause, resume and cancel are for the
//    batch's user, root and the admin group.
//  - Each active batch (queued, running) has one tarmac-backfill-runner,
//    started as the batch's user in a session of its own, its output in
//    runner.log (the agent's file, readable by the user's group). A runner
//    that ends is read by its last reported progress: done, failed
//    (with its problem), or started again with backoff (1 s doubling, at
//    most a minute). Pause and cancel send the runner SIGTERM (SIGKILL
//    after 30 s), through ProcessControl, so only the very process started
//    or adopted (PID and start time) is signalled; the results so far stay.
//  - The agent restarting adopts the runners that still run (PID and start
//    time from its own progress.json, checked against /proc: the same
//    process, a runner, the batch's user): a batch goes on across an agent
//    restart; a runner killed with the agent's old children is started
//    again. A batch folder the agent does not own alone is skipped.
//
// The jobs' thread (Start) runs Tick at once when a batch is submitted,
// resumed, paused or cancelled and when a runner exits (a pidfd), else
// every 250 ms.
//
// Thread safety: methods may run on any thread; Tick runs on the jobs'
// own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "backfill/batch_spec.h"
#include "common/clock.h"
#include "common/environment.h"
#include "common/log.h"
#include "common/mutex.h"
#include "ipc/method_table.h"
#include "leases/process_control.h"
#include "node/agent_figures.h"

namespace tarmac::agent {

// Where batch events go (LeaseService::RecordEvent): kind, the batch's uid
// and user, who asked (-1: the agent), and what happened.
using BatchEventSink = std::function<void(const std::string& kind, int64_t uid, const std::string& user,
                                          int64_t actor_uid, const std::string& detail)>;

struct BackfillJobsOptions {
  std::string dir;          // <state>/backfill
  std::string runner_path;  // tarmac-backfill-runner
  std::string socket;       // The agent's socket, for runners.
  std::string admin_group;
  BatchEventSink events;  // May be empty: no events.
  // Set in each runner's environment over the agent's own
  // (the simulated world, gpu::WorldEnvironment); engines inherit it.
  EnvironmentChanges environment = {};
  // The niceness each runner starts with ([backfill] nice); its engines
  // inherit it.
  int nice = 19;
};

class BackfillJobs {
 public:
  // Runners are signalled through `processes` (verified by start time).
  BackfillJobs(BackfillJobsOptions options, leases::ProcessControl* processes, Clock* clock, Logger* logger);
  ~BackfillJobs();

  // Reads the batches kept in the directory and adopts live runners.
  Status Open() EXCLUDES(mu_);
  Status AddMethods(ipc::MethodTable* table);
  void Start();
  void Stop();
  // One pass: reap, adopt, start and stop runners. Public for tests.
  void Tick() EXCLUDES(mu_);
  // The batch fields of what /metrics shows (every state present).
  void AddFigures(node::AgentFigures* figures) const EXCLUDES(mu_);

  // Whether process `pid`, started at `start_ticks`, is a runner this agent
  // started or adopted and that still runs. Takes only a lock of its own:
  // callable under any other (the lease service's).
  bool IsRunner(int64_t pid, int64_t start_ticks) const EXCLUDES(runners_mu_);
  // A reload's [backfill] nice, for runners started from now on.
  void SetNice(int nice) { nice_ = nice; }

  // tarmac-backfill-runner beside `self` (the agent's executable), else in
  // ../libexec/tarmac/ from it.
  static std::string FindRunner(const std::string& self);

 private:
  struct Job {
    backfill::BatchSpec spec;
    pid_t pid = 0;
    int pidfd = -1;  // Readable once the runner has exited.
    int64_t start_ticks = 0;
    bool is_child = false;
    std::optional<std::chrono::steady_clock::time_point> signalled_at;
    std::chrono::steady_clock::time_point started_at;
    std::chrono::steady_clock::time_point next_start;
    int failures = 0;
    backfill::BatchProgress progress;  // As the runner last reported it.
    std::chrono::steady_clock::time_point progress_saved_at;
    std::string progress_phase_saved;
  };

  nlohmann::json View(const Job& job) const;
  Status Save(const backfill::BatchSpec& spec) const;
  // Writes the agent's copy of a job's progress (with the runner's PID and
  // start time) to <id>/progress.json.
  void SaveProgress(Job* job) REQUIRES(mu_);
  Status MakeWorkDir(const backfill::BatchSpec& spec) const;
  std::string Dir(int64_t id) const;
  void Spawn(Job* job) REQUIRES(mu_);
  // Takes runner `pid` (started at `start_ticks`) as the job's.
  void Hold(Job* job, pid_t pid, int64_t start_ticks, bool is_child) REQUIRES(mu_);
  void Wake();
  void Ended(Job* job) REQUIRES(mu_);
  bool IsRunning(Job* job) REQUIRES(mu_);
  void Record(const std::string& kind, const backfill::BatchSpec& spec, int64_t actor_uid,
              const std::string& detail);
  Result<nlohmann::json> Submit(const nlohmann::json& params, uid_t uid, gid_t gid) EXCLUDES(mu_);
  Result<nlohmann::json> Progress(const nlohmann::json& params, const ipc::PeerCredentials& peer)
      EXCLUDES(mu_);
  Result<nlohmann::json> Change(const nlohmann::json& params, uid_t uid, gid_t gid, const std::string& to)
      EXCLUDES(mu_);

  BackfillJobsOptions options_;
  std::atomic<int> nice_;
  leases::ProcessControl* processes_;
  Clock* clock_;
  Logger* logger_;
  mutable Mutex mu_;
  std::map<int64_t, Job> jobs_ GUARDED_BY(mu_);
  int64_t next_id_ GUARDED_BY(mu_) = 1;
  // The live runners' (PID, start time), for IsRunner; a leaf lock.
  mutable Mutex runners_mu_;
  std::set<std::pair<int64_t, int64_t>> runners_ GUARDED_BY(runners_mu_);
  int wake_fd_ = -1;  // An eventfd: readable when Tick should run now.
  std::jthread thread_;
};

}  // namespace tarmac::agent
