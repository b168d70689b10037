// SPDX-License-Identifier: Apache-2.0
//
// The lease service's state, and the steps every part of the service
// changes it through. LeaseService (lease_service.h) is the front: it holds
// the one lock, under which it hands a LeaseCore to the parts that act on
// it, each in a file of its own:
//
//  - the API's methods (lease_api.h): requests, releases, listings;
//  - the answers they give (lease_answers.h): a lease, a queued request and
//    why it waits, as JSON;
//  - each tick's policies (lease_ticks.h): clients gone, expiry, idle
//    leases, foreign processes, zombies, MIG layouts;
//  - backfill (lease_ticks.h, lease_backfill.cc): the gate's marks, loans,
//    revocations and their hand-over;
//  - other schedulers (pod_leases.cc, slurm_jobs.cc, backfill_claims.cc):
//    the kubelet's and Slurm's GPUs as leases, and their claims.
//
// What LeaseCore's steps keep true: every change to a lease or the queue is
// written to the journal (SaveLease, SavePending, SaveShare, Erase) and told
// as an event (Event); a lease ends only through EndLease (its end
// remembered, its processes asked to terminate, its share saved); signals
// are sent only by the Signaller, after the change that asks for them is
// committed (Flush); a change that cannot be committed is taken back whole
// (Checkpoint, Rollback).
//
// The state the service owns in classes of their own: LeaseJournal
// (commits, the state file), LeaseWaiters (callers held by lease.wait),
// Signaller (signals and their grace), LoanDesk (loans), RequestMemory
// (request keys, why leases ended), SchedulerClaims (other schedulers'
// claims, Slurm actions), BackfillGate, ZombieTracker.
//
// Thread safety: none; used only under LeaseService's lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "leases/backfill_gate.h"
#include "leases/lease_journal.h"
#include "leases/lease_policy.h"
#include "leases/lease_waiters.h"
#include "leases/loans.h"
#include "leases/process_control.h"
#include "leases/published_marks.h"
#include "leases/request_memory.h"
#include "leases/scheduler_claims.h"
#include "leases/signaller.h"
#include "node/agent_figures.h"
#include "node/health_verdict.h"
#include "node/node_view.h"
#include "sched/lease_book.h"
#include "sched/lease_json.h"
#include "sched/zombies.h"
#include "store/lease_state.h"

namespace tarmac::leases {

// How long a revoked lease's GPUs may stay listed after its processes were
// killed before it ends anyway (a process stuck in the driver).
inline constexpr std::chrono::seconds kHandoverBound{10};
// A claim of another scheduler (GiveWay) lasts the grace, the hand-over
// bound and this.
inline constexpr std::chrono::seconds kClaimSlack{5};
// How soon a claim that waits asks again.
inline constexpr std::chrono::milliseconds kClaimRetry{200};
// A pod lease whose pod the kubelet never listed ends after this.
inline constexpr std::chrono::seconds kPodGrace{60};

// What the service keeps of each live lease besides the book (not saved).
struct LeaseRuntime {
  std::optional<sched::TimePoint> warned_at;
  bool has_acted = false;
  std::string warning;  // The idle warning, up to its policy ("...; policy 'cancel'").
  std::string acted;    // What that policy did, once it acted ("ran `scancel 42`").
  std::set<std::pair<int64_t, int64_t>> foreign_seen;  // (pid, start ticks) reported.
  std::vector<sched::ForeignProcess> foreign;          // Another user's processes on its GPUs now.
  // Its GPUs' use while the agent watched (a Slurm job's epilog says it):
  // utilization samples, GPU-seconds idle, the most memory used on one.
  double utilization_sum = 0;
  int64_t utilization_samples = 0;
  double idle_gpu_seconds = 0;
  int64_t memory_max_bytes = 0;
  std::optional<sched::TimePoint> last_tick;
  // A revoked backfill lease past its grace: when what was left of it was
  // killed. It ends once a reading lists no process on its GPUs.
  std::optional<sched::TimePoint> killed_at;
  // LeaseCore::readings_seen when it was killed or let go: a reading taken
  // later (a higher count) is one that lists whatever it left running.
  int64_t readings_at_let_go = 0;
  // What it left running was looked for (its token, its user's processes
  // on its GPUs) and killed: at the grace's end, or at a release by
  // another than its holder; a holder's release leaves that to a reading
  // that still lists a process.
  bool is_swept = false;
  bool is_released = false;                          // Its holder let go first (the end is "released").
  std::optional<sched::TimePoint> reading_asked_at;  // The last OnWantsReading for it.
  std::string revoked_for_claim;                     // Revoked for another scheduler (GiveWay): whose claim.
};

struct LeaseCore {
  using TimePoint = sched::TimePoint;
  // What a call may change, to take back when its change cannot be saved.
  struct Undo {
    sched::LeaseBook book;
    RequestMemory memory;
    std::map<int64_t, sched::Waiting> waiting;
    LeaseJournal::Mark journal;
    size_t signals_asked = 0;
    std::map<std::string, node::GpuDrain> drains;
    std::map<std::string, int64_t> xids_cleared_unix;
  };

  // `state` may be null: leases then live in memory only.
  LeaseCore(LeasePolicy policy, std::unique_ptr<store::LeaseState> state, ProcessControl* processes,
            Clock* clock, Logger* logger);

  // --- saving and telling (lease_core.cc) ------------------------------------
  sched::TimeBase Base() const;
  void SaveLease(const sched::Lease& lease) { journal.SaveLease(lease, Base()); }
  void SavePending(int64_t id) { journal.SavePending(book, id, Base()); }
  void SaveShare(int64_t uid) { journal.SaveShare(book, uid, Base()); }
  void Erase(const char* kind, int64_t id) { journal.Erase(kind, id); }
  // Saves every drained GPU (one record).
  void SaveDrains();
  // Records an event (logged, journalled; the lease's waiters touched; a
  // real arrival taught to backfill's gate).
  void Event(const std::string& kind, int64_t lease_id, int64_t uid, const std::string& user,
             const std::vector<int>& gpus, const Actor& actor, const std::string& detail);
  // Commits what changed since the last commit (the journal keeps it for
  // the next try when this fails), then answers the waiters it settles.
  Status Flush(TimePoint now);
  // Whether lease changes can be saved now (retrying a failing store once).
  bool CanSave(TimePoint now);
  // Notices a state file deleted or replaced under the agent, and reopens a
  // failing store once LeaseJournal::kRetryInterval has passed.
  void CheckStateFile(TimePoint now);
  Undo Checkpoint() const;
  void Rollback(Undo undo);
  // Teaches backfill's gate when real requests arrived (arrival_model.h),
  // from the journal's "granted" events of the last weeks.
  void SeedArrivals();
  // Answers the waiters whose request was granted or ended (called once
  // that is saved), and those whose timeout has passed.
  void AnswerWaiters(TimePoint now);
  void ExpireWaiters(TimePoint now);

  // Restores the saved leases, queue and fair share; re-attaches leases
  // whose client still runs and ends the others, terminating their
  // processes (LeaseService::Restore).
  Status Restore();

  // --- grants (lease_core.cc) -------------------------------------------------
  // Decides the queue again and records what it grants and revokes.
  void Decide(TimePoint now);
  // Gives a granted lease its token, saves it and records "granted" (with
  // `more` in the detail).
  void RecordGrant(sched::Lease l, const std::string& more);
  // A lease another scheduler (the kubelet, Slurm) has already handed out,
  // on exactly lease.uuids: granted now with a token, saved, and recorded
  // as a "granted" event by `actor` whose detail is `why` and its GPUs.
  Result<const sched::Lease*> GrantHeld(const sched::Caller& owner, sched::Lease lease, const Actor& actor,
                                        const std::string& why, TimePoint now);
  // A backfill lease's revocation begins: counted (per GPU, for /metrics)
  // and told to whoever waits on revocations.
  void CountPreemption(const sched::Lease& l);
  // Which lease holds each GPU index whole (MIG leases hold instances).
  std::map<int, int64_t> LeasedGpus() const;
  // What /metrics shows of leases, and the marks on each GPU, as of now.
  std::shared_ptr<Publication> MakePublication() const;

  // --- ends and signals (lease_ends.cc) --------------------------------------
  // Ends lease `id`: event `kind` with `detail`; with `terminate`, its
  // processes get SIGTERM now and SIGKILL after the grace period.
  void EndLease(int64_t id, const std::string& kind, const std::string& detail, const Actor& actor,
                bool terminate, TimePoint now, const std::set<int64_t>& spared = {});
  // Asks for SIGTERM (then SIGKILL after the grace) to `processes`; sent by
  // SendSignals once the change that asks for it is saved.
  void TerminateProcesses(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes,
                          const std::string& why, const Actor& actor);
  void SendSignals(TimePoint now);
  void FinishTerminations(TimePoint now);
  // A revoked lease's end of patience: its processes killed now (SIGKILL),
  // noted as killed; its end then waits for a reading (CheckRevoked).
  void KillRevokedNow(const sched::Lease& l, const std::string& why, TimePoint now);
  // Kills at once what revoked lease `l` left running (LeaseVictims, but
  // `spared`), recorded as `actor`'s for `why`, and marks it swept.
  void SweepRevoked(const sched::Lease& l, const std::set<int64_t>& spared, const std::string& why,
                    const Actor& actor);
  bool IsAlive(const sched::ProcessRef& ref) const;
  // Whether the latest reading lists a process on one of `l`'s whole GPUs.
  bool IsListedOnItsGpus(const sched::Lease& l) const;
  // Whether a process the latest reading lists on one of `l`'s GPUs still
  // runs (looked up by PID and start time).
  bool ListsALiveProcess(const sched::Lease& l) const;
  // Whether revoked lease `l`, killed or let go, has handed its GPUs over
  // empty: a reading processed since then lists no process on them (a
  // loan's, a MIG instance's or an external lease's GPU is not waited for).
  bool IsHandedOverEmpty(const sched::Lease& l) const;
  // Marks revoked lease `l` killed or let go now (killed_at) if it was not.
  void MarkLetGo(const sched::Lease& l, TimePoint now);
  // Lease `l` has just ended by its holder (its job finished): when a
  // request above backfill waits and every process the last reading listed
  // on its GPUs has exited, asks for a reading at once (on_wants_reading),
  // so that its GPUs go to the next request within milliseconds of the
  // job's end, not at the next tick (at most once every 100 ms).
  void AskReadingOnceEnded(const sched::Lease& l, TimePoint now);
  // The processes lease `l` holds: with its token, its job, and on a whole
  // GPU those of its user the driver lists there that started after its
  // client (a child that detached and dropped the token).
  std::vector<sched::ProcessRef> LeaseVictims(const sched::Lease& l, const std::set<int64_t>& spared = {});
  // `pid` and every process above it up to init: a caller who carries a
  // lease's token (a shell that took a reservation's variables) is never
  // signalled by its own call, nor is its shell.
  std::set<int64_t> SelfAndAncestors(int64_t pid) const;
  // The one victim model of a loan (docs/security.md rule 7): what carries
  // its token, and every other process the driver lists on its GPU that is
  // not its lender's: not there when the loan began, carrying no token of
  // the lender's, owned by the loan's user and started after its client (a
  // child that detached and dropped the token). A process of any other
  // user is never the loan's.
  std::vector<ProcessIdentity> LoanProcesses(const sched::Lease& loan) const;

  LeasePolicy policy;
  ProcessControl* process_control;
  Clock* clock;
  Logger* logger;

  sched::LeaseBook book;
  std::vector<sched::GpuSlot> slots;
  // The processes on each GPU index at the last tick (what a Slurm job's
  // epilog looks for).
  std::map<int, std::vector<ProcessIdentity>> processes_by_gpu;
  int64_t readings_seen = 0;  // Readings processes_by_gpu has come from.
  bool has_gpus = false;
  // GPUs drained by hand or by the health policy, by UUID (gpu_drains.cc):
  // given to no new lease, whatever their readings.
  std::map<std::string, node::GpuDrain> drains;
  // When an admin last cleared each GPU's Xids (tarmac undrain), by UUID:
  // Xids logged before count no more.
  std::map<std::string, int64_t> xids_cleared_unix;
  // Why each GPU the last reading says to drain is to drain, by index
  // (node/health_verdict.h).
  std::map<int, node::HealthVerdict> drain_evidence;
  std::map<int64_t, LeaseRuntime> runtime;
  std::map<int64_t, sched::Waiting> waiting;  // The last decision's waiting, by request id.
  RequestMemory memory;                       // Request keys, and why recent leases and requests ended.
  Signaller signaller;
  LeaseWaiters waiters;
  LeaseJournal journal;
  sched::ZombieTracker zombies;
  BackfillGate gate;
  LoanDesk loans;
  SchedulerClaims claims;
  int64_t backfill_preemptions = 0;
  std::map<int, int64_t> backfill_preemptions_by_gpu;
  double backfill_gpu_seconds_ended = 0;  // Of backfill leases that have ended.
  // Called whenever the lease thread's next wake may have come sooner (a
  // backfill lease begins to be revoked, a backfill request is queued), and
  // when a revoked lease's GPU (or a finished job's a request waits for)
  // should be empty now or a GPU's backfill gate opens
  // (LeaseService::OnNextWakeSooner, OnWantsReading).
  std::function<void()> on_next_wake_sooner;
  std::function<void()> on_wants_reading;
  // The gate opening (BackfillGate::NextOpening) a reading was last asked
  // for: asked once each, so that an opening a reading did not move is
  // left to the ticks.
  std::optional<sched::TimePoint> gate_reading_asked_for;
  // When AskReadingOnceEnded last asked for a reading.
  std::optional<sched::TimePoint> ended_reading_asked_at;
  // Whether a process is a backfill batch's runner the agent started
  // (LeaseService::SetBatchRunners); empty: none is.
  std::function<bool(const sched::ProcessRef&)> is_batch_runner;
  // An admin undrained GPU `uuid` (LeaseService::OnUndrain).
  std::function<void(const std::string& uuid)> on_undrain;
};

}  // namespace tarmac::leases
