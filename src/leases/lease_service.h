// SPDX-License-Identifier: Apache-2.0
//
// The agent's authority over GPUs: the lease methods of the local API
// (docs/protocol.md), and what the agent does each tick about leases and
// the processes on leased and unleased GPUs.
//
//  - Requests are checked (LeaseBook::Submit), decided at once when GPUs are
//    free, else queued; every tick decides again (Schedule: priority, fair
//    share, EASY backfill).
//  - A GPU is free when it is healthy, in no lease, runs no compute process
//    outside a lease (foreign use) and has the memory asked for.
//  - A `tarmac run` lease ends when its client releases it, and also when
//    the client dies (its job is then terminated); a queued request goes
//    when its client dies.
//  - At a lease's end (max-time, reservation end) its processes get SIGTERM,
//    then SIGKILL after [leases] kill_grace.
//  - Idle leases (no SM activity from the owner's processes on its GPUs for
//    its idle timeout) are warned, then after [leases] idle_grace acted on:
//    warn, release or terminate.
//  - Zombies (zombies.h) and foreign processes (another user's processes on
//    a leased GPU) are reported, or terminated when the policy says so.
//  - Every signal goes through ProcessControl::Signal, which re-verifies PID
//    start time and owner; every action is an event with who, what and why.
//  - Callers are who SO_PEERCRED says; users manage their own leases and
//    processes, root and the admin group manage all; refusals are events.
//  - State is saved in store::LeaseState at every change and restored at
//    start: leases whose client still runs are re-attached.
//  - Persistence fails closed: a call that changes a lease or the queue is
//    answered only after its change is committed; when the commit fails the
//    change is taken back (ids are never reused) and the caller gets
//    `storage_unavailable`. While the state cannot be saved, no lease is
//    granted, Problem() says why (for /health and hello), and what the
//    ticks changed is kept and committed once the store works again; a
//    read-only store is reopened every kStateRetryInterval. A state file
//    deleted under the agent is written anew from memory; one replaced by
//    another file is left alone and reported.
//  - Grants are pushed: `lease.wait` on a queued request is answered the
//    moment the request is granted or ends (once that is saved), or when
//    its timeout passes (lease_waiting.cc).
//  - Requests may carry a client-chosen request_key: a repeat (a client
//    retrying after a timeout) answers with the lease or queue entry the
//    first one made.
//
// LeaseService is the front: the API (lease_service.cc), what is enforced
// each tick (grants, ends of leases, signals, policies:
// lease_enforcement.cc), pods and Slurm jobs (pod_leases.cc, slurm_jobs.cc,
// backfill_claims.cc). The state it owns is in classes of their own:
//  - LeaseJournal (lease_journal.h): what each change writes, the commits,
//    the state file; lease_persistence.cc takes a change back whole;
//  - LeaseWaiters (lease_waiters.h): the callers held by lease.wait;
//  - PublishedMarks (published_marks.h): what readers outside the lock see.
//
// Thread safety: Handle and OnTick may run on different threads (one mutex,
// under which the journal and the waiters are used); the agent runs OnTick
// on a thread of its own (LeaseTicker), so that no sampler tick waits for
// SQLite, /proc scans or signals. Marks() and figures() take only the
// published marks' own lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "ipc/method_table.h"
#include "ipc/protocol.h"
#include "ipc/reply.h"
#include "leases/backfill_gate.h"
#include "leases/lease_journal.h"
#include "leases/lease_policy.h"
#include "leases/lease_waiters.h"
#include "leases/loans.h"
#include "leases/process_control.h"
#include "leases/published_marks.h"
#include "leases/request_memory.h"
#include "leases/signaller.h"
#include "node/agent_figures.h"
#include "node/lease_marks.h"
#include "node/node_view.h"
#include "sched/lease_book.h"
#include "sched/lease_json.h"
#include "sched/zombies.h"
#include "store/lease_state.h"

namespace tarmac::leases {

class LeaseService {
 public:
  using Ended = RequestMemory::Ended;

  // `state` may be null: leases then live in memory only.
  LeaseService(LeasePolicy policy, std::unique_ptr<store::LeaseState> state, ProcessControl* processes,
               Clock* clock, Logger* logger);

  // Restores the saved leases, queue and fair share; re-attaches leases
  // whose client still runs and ends the others, terminating their
  // processes. Call once, before serving.
  Status Restore() EXCLUDES(mu_);

  // Puts the lease methods (lease.*, leases, queue, events, zombies,
  // zombies.kill) in the agent's method table. kInvalidArgument when a name
  // is taken.
  Status AddMethods(ipc::MethodTable* table);
  // Answers one of those methods for `peer` (unknown_method for others).
  // lease.wait answers at once (as lease.get) unless `reply` is open; then
  // it may answer later through it.
  std::optional<std::string> Handle(const ipc::Request& request, const ipc::PeerCredentials& peer,
                                    const ipc::Reply& reply);
  std::string Handle(const ipc::Request& request, const ipc::PeerCredentials& peer) {
    return *Handle(request, peer, ipc::Reply());
  }

  // Each sampler tick: GPUs as read now.
  void OnTick(const node::NodeView& fleet, sched::TimePoint now) EXCLUDES(mu_);
  // When the first revoked backfill lease's grace passes (the clock's
  // steady time); empty when none is being revoked.
  std::optional<sched::TimePoint> RevocationDeadline() const EXCLUDES(mu_);
  // Ends the revoked backfill leases whose grace has passed and grants what
  // waited for them, between ticks.
  void EndRevoked() EXCLUDES(mu_);
  // Called (under the service's lock: it must not call back) whenever a
  // backfill lease begins to be revoked.
  void OnRevocation(std::function<void()> listener) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    on_revocation_ = std::move(listener);
  }
  // Called (under the service's lock: it must not block or call back) when
  // a revoked lease's GPU should be empty now (every process its last
  // reading listed has exited) and a reading would say so before the next
  // tick (the agent: Sampler::RequestReading). At most every 100 ms.
  void OnWantsReading(std::function<void()> listener) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    on_wants_reading_ = std::move(listener);
  }

  // --- Pods: GPUs the kubelet hands out (kube/, docs/kubernetes.md) ------
  // Records GPUs the kubelet allocates to one container as a lease of kind
  // "pod", saved before it returns; a pod lease already on exactly these
  // GPUs is kept (the kubelet asks again after a restart), pod leases that
  // overlap them end (the kubelet has given the GPUs anew). kNotFound for
  // an unknown UUID; kFailedPrecondition for a GPU that is not healthy or
  // that another kind of lease holds; kUnavailable before the first tick or
  // while lease changes cannot be saved. A backfill lease on them gives way
  // first (GiveWay): this waits for it, at most ClaimBound() (then
  // kUnavailable), sleeping on the clock between tries.
  Status HoldForPod(const std::vector<std::string>& uuids) EXCLUDES(mu_);
  // One try of HoldForPod: true once held, false while backfill gives way
  // (ask again after kClaimRetry).
  Result<bool> TryHoldForPod(const std::vector<std::string>& uuids) EXCLUDES(mu_);
  // How long another scheduler's claim waits for backfill at most: the
  // grace, the hand-over bound and kClaimSlack.
  std::chrono::milliseconds ClaimBound() const EXCLUDES(mu_);
  // The kubelet's allocations as its pod-resources API lists them now (GPU
  // UUID -> pod and container): names each pod lease's pod, adopts
  // allocations without a lease (made while the agent was down), and ends
  // pod leases no pod holds any more (one whose pod was never listed only
  // once kPodGrace has passed since its grant: a container is listed a
  // moment after its Allocate).
  void SyncPods(const std::map<std::string, node::KubernetesNames>& by_uuid) EXCLUDES(mu_);
  static constexpr std::chrono::seconds kPodGrace{60};

  // Slurm jobs (slurm.prolog and slurm.epilog in the API, docs/slurm.md):
  // the prolog records the job's GPUs as a lease of kind "slurm" owned by
  // the job's user; the epilog ends it and terminates what the job's user
  // left on those GPUs (verified, audited), and answers the job's use.

  // How the agent runs Slurm's commands (scontrol, scancel) for the idle
  // policy of Slurm jobs: argv, no shell; an error is recorded as an event.
  // Unset: those actions fail (and say so).
  // Applies a reloaded [leases], [zombies] and [backfill] from the next tick
  // (and call) on; leases, the queue and what each watcher has seen are kept.
  void SetPolicy(LeasePolicy policy) EXCLUDES(mu_);
  // When work last used each GPU before this agent started (Unix seconds by
  // UUID, store/last_use.h): backfill counts idle_for on from there.
  void SeedBackfillLastUse(const std::map<std::string, int64_t>& unix_by_uuid) EXCLUDES(mu_);
  // [leases] admin_group, for resolving a caller outside the lock.
  std::string AdminGroup() const EXCLUDES(mu_);

  // Replaces how the idle policy runs a Slurm command (`scontrol`,
  // `scancel`: argv, after the tick, outside the lock); tests record them.
  void SetSlurmCommand(std::function<Status(const std::vector<std::string>& argv)> run) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    slurm_command_ = std::move(run);
  }

  // Records an event that concerns no lease (a backfill batch's, kind
  // "batch_..."), by `actor_uid` (-1: the agent's own), saved at once when
  // the store works, else with the next change.
  void RecordEvent(const std::string& kind, int64_t uid, const std::string& user, int64_t actor_uid,
                   const std::string& detail) EXCLUDES(mu_);
  // Events of the agent's own (kind, detail), saved in one commit: a reader
  // of `events` sees all of them or none.
  void RecordAgentEvents(const std::vector<std::pair<std::string, std::string>>& kind_detail) EXCLUDES(mu_);

  // For status, history and the doctor: the lease on each GPU index, and
  // the backfill leases revoked there since the agent started (a lease on
  // two GPUs counts on each), as of the last tick or API call. Published
  // apart from the service's lock: a reader (the sampler's tick) never
  // waits for a lease tick's /proc scans or commits.
  using Publication = leases::Publication;
  std::shared_ptr<const Publication> Marks() const { return marks_.Get(); }

  // Why lease changes cannot be saved now; empty when they can.
  std::string Problem() const EXCLUDES(mu_);
  // The lease state for `hello`: its path and, when failing, the problem.
  nlohmann::json StateJson() const EXCLUDES(mu_);

  // How often a failing store is reopened and retried.
  static constexpr std::chrono::seconds kStateRetryInterval = LeaseJournal::kRetryInterval;
  // lease.wait: how long a waiter is held when it does not say, and at most.
  static constexpr std::chrono::milliseconds kDefaultWaitTimeout{30000};
  static constexpr std::chrono::milliseconds kMaxWaitTimeout{600000};
  // How long a revoked lease's GPUs may stay listed after its processes
  // were killed before it ends anyway (a process stuck in the driver).
  static constexpr std::chrono::seconds kHandoverBound{10};
  // A claim of another scheduler (GiveWay) lasts the grace, the hand-over
  // bound and this.
  static constexpr std::chrono::seconds kClaimSlack{5};
  // How soon a claim that waits asks again.
  static constexpr std::chrono::milliseconds kClaimRetry{200};

  // Callers waiting in lease.wait now.
  size_t waiter_count() const EXCLUDES(mu_);

  // What /metrics shows of leases (docs/metrics.md); the batch fields are
  // left to the batch supervisor. As of the last publication of the marks
  // (after each tick and each change): a scrape never waits for the lease
  // lock.
  node::AgentFigures figures() const { return marks_.Get()->figures; }

 private:
  using TimePoint = sched::TimePoint;
  struct Runtime {  // Per live lease, not saved.
    std::optional<TimePoint> warned_at;
    bool has_acted = false;
    std::string warning;  // The idle warning, up to its policy ("...; policy 'cancel'").
    std::string acted;    // What that policy did, once it acted ("ran `scancel 42`").
    std::set<std::pair<int64_t, int64_t>> foreign_seen;  // (pid, start ticks) reported.
    nlohmann::json foreign = nlohmann::json::array();
    // Its GPUs' use while the agent watched (a Slurm job's epilog says it):
    // utilization samples, GPU-seconds idle, the most memory used on one.
    double utilization_sum = 0;
    int64_t utilization_samples = 0;
    double idle_gpu_seconds = 0;
    int64_t memory_max_bytes = 0;
    std::optional<TimePoint> last_tick;
    // A revoked backfill lease past its grace: when what was left of it was
    // killed. It ends once a reading lists no process on its GPUs.
    std::optional<TimePoint> killed_at;
    bool is_released = false;                   // Its holder let go first (the end is "released").
    std::optional<TimePoint> reading_asked_at;  // The last OnWantsReading for it.
    std::string revoked_for_claim;              // Revoked for another scheduler (GiveWay): whose claim.
  };
  struct Claim {  // Another scheduler's, waiting for backfill to give way.
    std::vector<std::string> uuids;
    TimePoint expires_at;
    std::string waiting_for;  // What it waits for, as its caller is told.
  };
  using Actor = leases::Actor;
  // What a call may change, to take back when its change cannot be saved.
  struct Undo {
    sched::LeaseBook book;
    RequestMemory memory;
    std::map<int64_t, sched::Waiting> waiting;
    LeaseJournal::Mark journal;
    size_t signals_asked = 0;
  };

  // One call of a method: its params, who asks, and when.
  struct Call {
    const nlohmann::json& params;
    const ipc::PeerCredentials& peer;
    const sched::Caller& caller;
    TimePoint now;
  };
  struct MethodEntry {
    const char* name;
    bool is_change;  // Answered only once saved; taken back when it cannot be.
    Result<nlohmann::json> (LeaseService::*answer)(const Call&);
    bool may_defer = false;  // May answer later (lease.wait).
  };
  static const std::vector<MethodEntry>& Methods();
  // Locks, resolves the caller, answers, and (for a change) saves or takes back.
  // Serve or Wait, as the method is; a change is then published in Marks().
  std::optional<std::string> Dispatch(const MethodEntry& method, const ipc::Request& request,
                                      const ipc::PeerCredentials& peer, const ipc::Reply& reply)
      EXCLUDES(mu_);
  std::string Serve(const MethodEntry& method, const ipc::Request& request, const ipc::PeerCredentials& peer)
      EXCLUDES(mu_);
  // The answer line, with refusals recorded as events.
  std::string Answer(const MethodEntry& method, const ipc::Request& request, const ipc::PeerCredentials& peer,
                     const sched::Caller& caller, TimePoint now) REQUIRES(mu_);
  // lease.wait: the answer now, or nothing when the caller is kept waiting.
  std::optional<std::string> Wait(const MethodEntry& method, const ipc::Request& request,
                                  const ipc::PeerCredentials& peer, const ipc::Reply& reply) EXCLUDES(mu_);
  // Answers the waiters whose request was granted or ended (called once
  // that is saved), and those whose timeout has passed.
  void AnswerWaiters(TimePoint now) REQUIRES(mu_);
  void ExpireWaiters(TimePoint now) REQUIRES(mu_);
  void AnswerWaiter(int64_t id, const LeaseWaiters::Waiter& w, TimePoint now) REQUIRES(mu_);
  Result<nlohmann::json> OnRequest(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnGet(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnAttach(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnRelease(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnExtend(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnLeases(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnQueue(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnEvents(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnZombies(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnBackfillGpus(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnZombiesKill(const Call& c) REQUIRES(mu_);
  // slurm.prolog and slurm.epilog (slurm_jobs.cc).
  Result<nlohmann::json> OnSlurmProlog(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> OnSlurmEpilog(const Call& c) REQUIRES(mu_);
  Result<nlohmann::json> Request(const nlohmann::json& params, const ipc::PeerCredentials& peer,
                                 const sched::Caller& caller, TimePoint now) REQUIRES(mu_);
  Result<nlohmann::json> Get(int64_t id, const sched::Caller& viewer, TimePoint now) const REQUIRES(mu_);
  Result<nlohmann::json> Release(int64_t id, const ipc::PeerCredentials& peer, const sched::Caller& caller,
                                 TimePoint now) REQUIRES(mu_);
  Result<nlohmann::json> KillZombies(const nlohmann::json& params, const sched::Caller& caller, TimePoint now)
      REQUIRES(mu_);
  nlohmann::json LeasesJson(const sched::Caller& viewer, TimePoint now) const REQUIRES(mu_);
  nlohmann::json QueueJson(TimePoint now) const REQUIRES(mu_);
  // A lease as answers show it; its token only to its owner and admins.
  nlohmann::json LeaseJson(const sched::Lease& lease, const sched::Caller& viewer, TimePoint now) const
      REQUIRES(mu_);
  nlohmann::json QueuedJson(const sched::Pending& pending, TimePoint now) const REQUIRES(mu_);
  std::string WaitReason(int64_t id) const REQUIRES(mu_);
  // Why backfill's gate refuses the free GPUs among `marked` (with at least
  // `memory` free), for the one that opens first: "GPU 3: idle 2m 00s of
  // idle_for 10m 00s, opens in 8m 00s"; "" when it refuses none.
  std::string BackfillRefusal(const std::vector<sched::GpuSlot>& marked, int64_t memory) const REQUIRES(mu_);
  // Where request `id` stands in the last decision; null when not waiting.
  const sched::Waiting* WaitingOf(int64_t id) const REQUIRES(mu_);
  // Which lease holds each GPU index whole (MIG leases hold instances).
  std::map<int, int64_t> LeasedGpus() const REQUIRES(mu_);

  // One tick's work under mu_: the GPUs as read, grants, ends, policies.
  void Enforce(const node::NodeView& fleet, TimePoint now) REQUIRES(mu_);
  void Decide(TimePoint now) REQUIRES(mu_);
  // Sends the signals asked for, saves, and (while saving works) decides.
  void SaveThenDecide(TimePoint now) REQUIRES(mu_);
  // Ends lease `id`: event `kind` with `detail`; with `terminate`, its
  // processes get SIGTERM now and SIGKILL after the grace period.
  void EndLease(int64_t id, const std::string& kind, const std::string& detail, const Actor& actor,
                bool terminate, TimePoint now, const std::set<int64_t>& spared = {}) REQUIRES(mu_);
  // `pid` and every process above it up to init: a caller who carries a
  // lease's token (a shell that took a reservation's variables) is never
  // signalled by its own call, nor is its shell.
  std::set<int64_t> SelfAndAncestors(int64_t pid) REQUIRES(mu_);
  // Asks for SIGTERM (then SIGKILL after the grace) to `processes`; sent by
  // SendSignals once the change that asks for it is saved.
  void TerminateProcesses(int64_t lease_id, int64_t uid, std::vector<sched::ProcessRef> processes,
                          const std::string& why, const Actor& actor, TimePoint now) REQUIRES(mu_);
  void SendSignals(TimePoint now) REQUIRES(mu_);
  // Records what the signaller did in the event log.
  void RecordSignals(const std::vector<SignalEvent>& events) REQUIRES(mu_);
  void CheckClients(TimePoint now) REQUIRES(mu_);
  void CheckIdle(const node::NodeView& fleet, TimePoint now) REQUIRES(mu_);
  // Whether the lease's own processes computed on its GPUs this tick, and
  // whether that could be known; its runtime's figures updated.
  struct Activity {
    bool is_active = false;
    bool is_known = true;
  };
  Activity ObserveActivity(const sched::Lease& l, const node::NodeView& fleet, Runtime& rt) const
      REQUIRES(mu_);
  // Carries out the idle policy's actions decided this tick.
  void ActOnIdle(const std::vector<std::tuple<int64_t, IdleAction, std::string>>& acts, TimePoint now)
      REQUIRES(mu_);
  void CheckForeign(const node::NodeView& fleet, TimePoint now) REQUIRES(mu_);
  // Ends leases on MIG instances gone from their GPU's layout (mig_leases.cc).
  void CheckMigInstances(const node::NodeView& fleet, TimePoint now) REQUIRES(mu_);
  // Marks the free instances with processes outside any lease (mig_leases.cc).
  void MarkMigForeign(const node::NodeView& fleet) REQUIRES(mu_);
  void FinishTerminations(TimePoint now) REQUIRES(mu_);
  // Which GPUs accept backfill now (GpuSlot::accepts_backfill), given which
  // lease holds each GPU.
  // Whether lease `l` lends its GPU's free memory when idle (loans.h).
  bool Lends(const sched::Lease& l) const REQUIRES(mu_);
  // Whether `pid` on GPU `gpu` is a loan's (at the last tick).
  bool IsLoanProcess(int gpu, int64_t pid) const REQUIRES(mu_);
  // The one victim model of a loan (docs/security.md rule 7): what carries
  // its token, and every other process the driver lists on its GPU that is
  // not its lender's: not there when the loan began, carrying no token of
  // the lender's, owned by the loan's user and started after its client (a
  // child that detached and dropped the token). A process of any other
  // user is never the loan's.
  std::vector<ProcessIdentity> LoanProcesses(const sched::Lease& loan) REQUIRES(mu_);
  // Each tick: what each lender's GPU shows; recalls the loans that must
  // end and notes the GPUs that may be lent.
  void WatchLoans(const node::NodeView& fleet, TimePoint now) REQUIRES(mu_);
  // After a decision: lends the GPUs offered to queued backfill requests.
  void GrantLoans(TimePoint now) REQUIRES(mu_);
  // Revokes a loan: with the backfill grace, or at once (its processes
  // killed now) when memory is at stake.
  void RecallLoan(const LoanRecall& r, TimePoint now) REQUIRES(mu_);
  // A revoked lease's end of patience: its processes killed now (SIGKILL),
  // noted as killed; its end then waits for a reading (CheckRevoked).
  void KillRevokedNow(const sched::Lease& l, const std::string& why, TimePoint now) REQUIRES(mu_);
  // Gives a granted lease its token, saves it and records "granted" (with
  // `more` in the detail).
  void RecordGrant(sched::Lease l, const std::string& more) REQUIRES(mu_);
  // What backfill's gate sees now besides the fleet: local time and what
  // waiting requests of other priorities could use.
  GateContext GateContextNow() const REQUIRES(mu_);
  // Each tick: asks backfill's gate which GPUs and MIG instances accept
  // backfill now (`by_gpu`: the lease on each GPU index) and marks their
  // slots.
  void MarkBackfill(const node::NodeView& fleet, const std::map<int, int64_t>& by_gpu, TimePoint now)
      REQUIRES(mu_);
  // Tells of the leases the last decision revoked; ends those whose grace
  // has passed.
  void AnnounceRevocations(TimePoint now) REQUIRES(mu_);
  // Kills the revoked leases whose grace has passed and ends those handed
  // over; whether it killed or ended any.
  bool CheckRevoked(TimePoint now) REQUIRES(mu_);
  bool IsAlive(const sched::ProcessRef& ref) REQUIRES(mu_);
  IdleAction IdleActionFor(const sched::Lease& lease) const REQUIRES(mu_);
  SlurmIdleAction SlurmActionFor(const sched::Lease& lease) const REQUIRES(mu_);
  // A lease another scheduler (the kubelet, Slurm) has already handed out,
  // on exactly lease.uuids: granted now with a token, saved, and recorded
  // as a "granted" event by `actor` whose detail is `why` and its GPUs.
  Result<const sched::Lease*> GrantHeld(const sched::Caller& owner, sched::Lease lease, const Actor& actor,
                                        const std::string& why, TimePoint now) REQUIRES(mu_);
  // Backfill gives way to every other holder (backfill_claims.cc): true
  // when no backfill lease holds a device `uuids` names, on its GPU or on
  // its instances. Otherwise those leases are revoked for `claim` (another
  // scheduler's: "Slurm job 42"), with the grace and events of any
  // revocation, the devices are kept from every other grant for `claim`
  // until it asks again and finds them free (or kHandoverBound past the
  // grace), and it is false.
  bool GiveWay(const std::vector<std::string>& uuids, const std::string& claim, TimePoint now) REQUIRES(mu_);
  // Drops claims past their time and marks the claimed devices (and their
  // GPUs and instances) as taken in slots_.
  void MarkClaimed(TimePoint now) REQUIRES(mu_);
  // The claim a pod's Allocate of `uuids` makes.
  static std::string PodClaim(const std::vector<std::string>& uuids);
  // A backfill lease's revocation begins: counted (per GPU, for /metrics)
  // and told to whoever waits on revocations.
  void CountPreemption(const sched::Lease& l) REQUIRES(mu_);
  // What is left of lease `id`'s processes (queued by EndLease) gets
  // SIGKILL at once instead of SIGTERM and kill_grace.
  void KillNow(int64_t id) REQUIRES(mu_);
  // The processes lease `l` holds: with its token, its job, and on a whole
  // GPU those of its user the driver lists there that started after its
  // client (a child that detached and dropped the token).
  std::vector<sched::ProcessRef> LeaseVictims(const sched::Lease& l, const std::set<int64_t>& spared = {})
      REQUIRES(mu_);
  // Whether the latest reading lists a process on one of `l`'s whole GPUs.
  bool IsListedOnItsGpus(const sched::Lease& l) const REQUIRES(mu_);
  // A revoked lease (in its grace, or killed): once every process the last
  // reading listed on its GPUs has exited, or when it listed none, asks
  // for a reading (OnWantsReading), at most every kReadingAskEvery.
  void AskReadingOnceExited(const sched::Lease& l, Runtime* rt, TimePoint now) REQUIRES(mu_);
  // The [slurm] idle policy's action on an idle job: recorded (dry run), or
  // queued for OnTick to run without the lock.
  void QueueSlurmAction(const sched::Lease& lease, const std::string& why) REQUIRES(mu_);
  std::chrono::milliseconds IdleTimeoutOf(const sched::Lease& lease) const REQUIRES(mu_);

  // Whether lease changes can be saved now (retrying a failing store once).
  bool CanSave(TimePoint now) REQUIRES(mu_);
  void SaveLease(const sched::Lease& lease) REQUIRES(mu_);
  void SavePending(int64_t id) REQUIRES(mu_);
  void SaveShare(int64_t uid) REQUIRES(mu_);
  void Erase(const char* kind, int64_t id) REQUIRES(mu_);
  // Teaches backfill's gate when real requests arrived (arrival_model.h),
  // from the journal's "granted" events of the last weeks.
  void SeedArrivals() REQUIRES(mu_);
  void Event(const std::string& kind, int64_t lease_id, int64_t uid, const std::string& user,
             const std::vector<int>& gpus, const Actor& actor, const std::string& detail) REQUIRES(mu_);
  // Commits what changed since the last commit (the journal keeps it for
  // the next try when this fails), then answers the waiters it settles.
  Status Flush(TimePoint now) REQUIRES(mu_);
  // Replaces what Marks() gives with the book as it is now.
  void PublishMarks() REQUIRES(mu_);
  node::AgentFigures ComputeFigures() const REQUIRES(mu_);
  // Notices a state file deleted or replaced under the agent, and reopens a
  // failing store once kStateRetryInterval has passed.
  void CheckStateFile(TimePoint now) REQUIRES(mu_);
  Undo Checkpoint() const REQUIRES(mu_);
  void Rollback(Undo undo) REQUIRES(mu_);
  sched::TimeBase Base() const;

  LeasePolicy policy_ GUARDED_BY(mu_);
  ProcessControl* processes_;
  Clock* clock_;
  Logger* logger_;

  mutable Mutex mu_;
  sched::LeaseBook book_ GUARDED_BY(mu_);
  std::vector<sched::GpuSlot> slots_ GUARDED_BY(mu_);
  // The processes on each GPU index at the last tick (what a Slurm job's
  // epilog looks for).
  std::map<int, std::vector<ProcessIdentity>> processes_by_gpu_ GUARDED_BY(mu_);
  struct SlurmAct {  // A Slurm command the idle policy runs after the tick.
    int64_t lease_id = 0;
    int64_t uid = -1;
    std::string user;
    std::vector<int> gpus;
    std::string job;
    SlurmIdleAction action = SlurmIdleAction::kWarn;
    std::string why;
    std::vector<std::string> argv;
  };
  std::vector<SlurmAct> slurm_actions_ GUARDED_BY(mu_);
  std::function<Status(const std::vector<std::string>&)> slurm_command_ GUARDED_BY(mu_);
  bool has_gpus_ GUARDED_BY(mu_) = false;
  sched::ZombieTracker zombies_ GUARDED_BY(mu_);
  BackfillGate backfill_ GUARDED_BY(mu_);
  LoanDesk loans_ GUARDED_BY(mu_);

  int64_t backfill_preemptions_ GUARDED_BY(mu_) = 0;
  std::map<int, int64_t> backfill_preemptions_by_gpu_ GUARDED_BY(mu_);
  PublishedMarks marks_;  // What Marks() gives; replaced whole by PublishMarks.
  std::function<void()> on_revocation_ GUARDED_BY(mu_);
  std::function<void()> on_wants_reading_ GUARDED_BY(mu_);
  std::map<std::string, Claim> claims_ GUARDED_BY(mu_);    // By claim ("Slurm job 42").
  double backfill_gpu_seconds_ended_ GUARDED_BY(mu_) = 0;  // Of backfill leases that have ended.
  std::map<int64_t, Runtime> runtime_ GUARDED_BY(mu_);
  RequestMemory memory_ GUARDED_BY(mu_);  // Request keys, and why recent leases and requests ended.
  Signaller signaller_ GUARDED_BY(mu_);
  std::map<int64_t, sched::Waiting> waiting_ GUARDED_BY(mu_);  // The last decision's waiting, by request id.
  LeaseWaiters waiters_ GUARDED_BY(mu_);
  LeaseJournal journal_ GUARDED_BY(mu_);
};

}  // namespace tarmac::leases
