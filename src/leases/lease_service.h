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
// LeaseService is the front: it holds the one lock and the state
// (LeaseCore, lease_core.h), and orders the parts that act on it: the API's
// methods (lease_api.h), each tick's policies (lease_ticks.h), pods and
// Slurm jobs (scheduler_leases.h, lease_api.h). A new integration adds a
// part of its own, not members here.
//
// Thread safety: Handle and OnTick may run on different threads (one mutex,
// under which the lease state is used); the agent runs OnTick on a thread
// of its own (LeaseTicker), so that no sampler tick waits for SQLite, /proc
// scans or signals. Marks() and figures() take only the published marks'
// own lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "ipc/method_table.h"
#include "ipc/protocol.h"
#include "ipc/reply.h"
#include "leases/lease_api.h"
#include "leases/lease_core.h"
#include "leases/lease_policy.h"
#include "leases/process_control.h"
#include "leases/published_marks.h"
#include "node/agent_figures.h"
#include "node/lease_marks.h"
#include "node/node_view.h"
#include "store/lease_state.h"

namespace tarmac::leases {

class LeaseService {
 public:
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
  void OnTick(const node::NodeView& node_view, sched::TimePoint now) EXCLUDES(mu_);
  // When the lease thread next acts between ticks (the clock's steady
  // time): a revoked backfill lease's grace passing or a look for its
  // processes' exit, or a GPU's backfill gate opening while backfill waits;
  // empty when none.
  std::optional<sched::TimePoint> NextWake() const EXCLUDES(mu_);
  // Between ticks, at NextWake: ends the revoked backfill leases whose grace
  // has passed and grants what waited for them; asks for a reading when a
  // backfill gate has opened (OnWantsReading).
  void OnWake() EXCLUDES(mu_);
  // Called (under the service's lock: it must not call back) whenever
  // NextWake may have come sooner: a backfill lease begins to be revoked,
  // or a backfill request is queued (a gate's opening may now be waited
  // for).
  void OnNextWakeSooner(std::function<void()> listener) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    core_.on_next_wake_sooner = std::move(listener);
  }
  // Called (under the service's lock: it must not block or call back) when
  // a revoked lease's GPU, or a finished job's that a request waits for,
  // should be empty now (every process its last reading listed has exited)
  // and a reading would say so before the next tick (the agent:
  // Sampler::RequestReading). At most every 100 ms for each.
  void OnWantsReading(std::function<void()> listener) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    core_.on_wants_reading = std::move(listener);
  }
  // Called (under the service's lock: it must not block or call back) when
  // an admin undrains GPU `uuid`: the Xids seen on it stop counting (the
  // agent: Sampler::ForgetXids).
  void OnUndrain(std::function<void(const std::string& uuid)> listener) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    core_.on_undrain = std::move(listener);
  }
  // When an admin last cleared each GPU's Xids, by UUID: the Xids the
  // history holds from before count no more.
  std::map<std::string, int64_t> XidsClearedAt() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return core_.xids_cleared_unix;
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
  static constexpr std::chrono::seconds kPodGrace = leases::kPodGrace;

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
  void SetSlurmCommand(SchedulerClaims::Command run) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    core_.claims.SetSlurmCommand(std::move(run));
  }

  // Tells which processes are backfill batches' runners the agent started
  // (called under the service's lock: it must take no other lock that
  // calls back). A backfill lease such a runner asks for yields at notice
  // (sched::LeaseRequest::yields_at_notice): it is revoked first.
  void SetBatchRunners(std::function<bool(const sched::ProcessRef&)> is_runner) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    core_.is_batch_runner = std::move(is_runner);
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
  // The hand-over and claim bounds (lease_core.h).
  static constexpr std::chrono::seconds kHandoverBound = leases::kHandoverBound;
  static constexpr std::chrono::seconds kClaimSlack = leases::kClaimSlack;
  static constexpr std::chrono::milliseconds kClaimRetry = leases::kClaimRetry;

  // The leases (as `viewer` sees them) and the queue now: what `leases` and
  // `queue` answer, typed, for the web's stream (no socket line encoded and
  // parsed again).
  sched::LeaseListing Listing(const sched::Caller& viewer) const EXCLUDES(mu_);
  // Journal events with seq > `after`, at most `limit` (with `newest`, the
  // newest `limit`), oldest first: what `events` answers, typed.
  // kUnavailable when the agent keeps no lease state.
  Result<std::vector<store::LeaseEvent>> Events(int64_t after, int64_t limit, bool newest) EXCLUDES(mu_);

  // Callers waiting in lease.wait now.
  size_t waiter_count() const EXCLUDES(mu_);

  // What /metrics shows of leases (docs/metrics.md); the batch fields are
  // left to the batch supervisor. As of the last publication of the marks
  // (after each tick and each change): a scrape never waits for the lease
  // lock.
  node::AgentFigures figures() const { return marks_.Get()->figures; }

 private:
  using TimePoint = sched::TimePoint;
  // Locks, resolves the caller, answers, and (for a change) saves or takes back.
  // Serve or Wait, as the method is; a change is then published in Marks().
  std::optional<std::string> Dispatch(const LeaseMethod& method, const ipc::Request& request,
                                      const ipc::PeerCredentials& peer, const ipc::Reply& reply)
      EXCLUDES(mu_);
  std::string Serve(const LeaseMethod& method, const ipc::Request& request, const ipc::PeerCredentials& peer)
      EXCLUDES(mu_);
  // The answer line, with refusals recorded as events.
  std::string Answer(const LeaseMethod& method, const ipc::Request& request, const ipc::PeerCredentials& peer,
                     const sched::Caller& caller, TimePoint now) REQUIRES(mu_);
  // lease.wait: the answer now, or nothing when the caller is kept waiting.
  std::optional<std::string> Wait(const LeaseMethod& method, const ipc::Request& request,
                                  const ipc::PeerCredentials& peer, const ipc::Reply& reply) EXCLUDES(mu_);
  // Replaces what Marks() gives with the book as it is now.
  void PublishMarks() REQUIRES(mu_);

  Clock* clock_;  // The same as core_.clock: for sleeping between claims, outside the lock.
  mutable Mutex mu_;
  LeaseCore core_ GUARDED_BY(mu_);
  PublishedMarks marks_;  // What Marks() gives; replaced whole by PublishMarks.
};

}  // namespace tarmac::leases
