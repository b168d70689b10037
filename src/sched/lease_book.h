// SPDX-License-Identifier: Apache-2.0
//
// The ledger of GPU leases and the queue of requests waiting for GPUs: what
// the agent is the one authority over. Requests are checked when they
// arrive (a bad one changes nothing), decisions grant leases through
// Schedule (schedule.h), and only a lease's owner or an admin may release,
// extend or cancel. Every lease's use is charged to its owner's fair share
// when it ends. No GPU is ever in two leases (CheckInvariants).
//
// Pure: GPUs and time are passed in; the agent persists what changes.
// Thread safety: none; the agent serializes calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "node/lease_kind.h"
#include "sched/fair_share.h"
#include "sched/mig_placement.h"
#include "sched/schedule.h"

namespace tarmac::sched {

using TimePoint = std::chrono::steady_clock::time_point;

// Who asks, as the kernel vouches for it (SO_PEERCRED).
struct Caller {
  int64_t uid = -1;
  std::string user;
  bool is_admin = false;  // Root or a member of the admin group.
};

// A process, told apart from a later one with the same PID by its start
// time (clock ticks after boot, /proc/<pid>/stat field 22).
struct ProcessRef {
  int64_t pid = 0;  // 0: none.
  int64_t start_ticks = 0;
};

struct LeaseRequest {
  GpuWants wants;
  Priority priority = Priority::kNormal;
  std::optional<std::chrono::seconds> max_time;      // Ends the lease (run --max-time, reserve --for).
  std::optional<std::chrono::seconds> idle_timeout;  // Idle-lease policy applies after this.
  std::string command;                               // What it is for, shown in listings.
  bool is_reservation = false;                       // reserve: no job; lives until released or its end.
  // The client waiting for it (tarmac run): when it dies, the request is
  // dropped, or the lease's job terminated and the lease released.
  ProcessRef holder;
  // Chosen by the client, the same for every retry of one request: a
  // repeat returns the lease or queue entry the first one made. Empty: none.
  std::string request_key;
  // Its GPUs' free memory may be lent to backfill while it sits idle
  // (run/reserve --lend-idle; leases/loans.h).
  bool lends_idle = false;
  // A backfill batch's runner that the agent started asks (the kernel
  // vouches for its PID and start time): it stops on notice, so a request
  // that must revoke backfill revokes its leases first. Never from the
  // client's words.
  bool yields_at_notice = false;
};

struct Lease {
  int64_t id = 0;
  int64_t uid = -1;
  std::string user;
  std::vector<int> gpus;
  std::vector<std::string> uuids;
  Priority priority = Priority::kNormal;
  TimePoint granted_at;
  std::optional<TimePoint> ends_at;
  std::optional<std::chrono::seconds> idle_timeout;
  std::string command;
  // How it is held, and so how it ends: kRun (with its client),
  // kReservation (outlives it), kPod (the kubelet ends it), kSlurm (the
  // job's epilog; `slurm_job` names the job). Never kBackfill: backfill is
  // the priority, and a run or reservation at that priority is what KindOf
  // calls a backfill lease.
  node::LeaseKind kind = node::LeaseKind::kRun;
  ProcessRef holder;        // From the request.
  ProcessRef job;           // The job's first process (tarmac run), once attached.
  std::string request_key;  // From the request.
  // Since when the owner's processes on its GPUs have shown no SM activity
  // (saved, so that an agent restart does not reset it); empty: active.
  std::optional<TimePoint> idle_since;
  // Random, set by the agent at the grant: marks the lease's processes
  // (TARMAC_LEASE_TOKEN) so that nothing else can match them.
  std::string token;
  // A backfill lease being revoked: since when, and for which request (0:
  // for another scheduler's claim, a Slurm job or a pod). It
  // ends when its holder lets go or the grace has passed (the agent's).
  std::optional<TimePoint> revoking_since;
  int64_t revoked_for = 0;
  // A GPU the kubelet allocated to a pod (kPod): `user` is "namespace/pod"
  // once the pod is known ("kubelet" until then), `command` its container.
  // A Slurm job's GPUs (kSlurm), from its prolog to its epilog: the job id;
  // `user` and `uid` are the job's owner.
  std::string slurm_job;
  std::string slurm_partition;  // Its partition (the idle policy's key).
  // A MIG instance's lease: `uuids` is its one MIG UUID, `gpus` its GPU.
  std::string mig_profile = std::string();  // "1g.10gb"; empty for whole GPUs.
  bool lends_idle = false;                  // From the request.
  bool yields_at_notice = false;            // From the request.
  // A loan: a backfill lease on one GPU of lease `lent_from`, which
  // still holds it, in at most `lent_memory_bytes` of its memory. The GPU
  // stays the lender's for everything else (placement, foreign processes,
  // idle policy); the loan ends as any backfill lease does, or becomes an
  // ordinary backfill lease when its lender ends first.
  int64_t lent_from = 0;
  int64_t lent_memory_bytes = 0;
};

// Whether the lease is a loan (backfill beside an idle lender).
inline bool IsLoan(const Lease& lease) { return lease.lent_from != 0; }

// Whether the lease holds a MIG instance rather than whole GPUs: it names
// the instance's profile.
inline bool IsMigLease(const Lease& lease) { return !lease.mig_profile.empty(); }

// What a lease is (node/lease_kind.h): pod, Slurm, backfill (run or
// reservation), reservation or run, the first that applies.
node::LeaseKind KindOf(const Lease& lease);
// Its kind's name, as listings, events and the saved state say it.
inline std::string_view LeaseKindName(const Lease& lease) { return node::LeaseKindName(KindOf(lease)); }
// Whether another scheduler (the kubelet, Slurm) decides when the lease
// ends: it has no client to outlive and no one releases it through tarmac.
inline bool IsExternal(const Lease& lease) { return node::IsExternal(KindOf(lease)); }

struct Pending {
  int64_t id = 0;
  Caller owner;
  LeaseRequest request;
  TimePoint submitted_at;
};

// Limits on what a request may ask for.
inline constexpr std::chrono::hours kMaxLeaseTime{24 * 30};

class LeaseBook {
 public:
  explicit LeaseBook(FairShare share = FairShare()) : share_(std::move(share)) {}

  // Checks `request` against the GPUs that exist and queues it; returns its
  // id (which the lease keeps when granted). kInvalidArgument, naming the
  // field, for a count under 1 or above the GPUs there are, unknown or
  // repeated UUIDs, a GPU in MIG mode asked for whole, a MIG profile or
  // instance the machine lacks (mig_placement.h), negative memory, or
  // durations not in (0, 30 days],
  // and ("can never fit: ...") for a request no state of the GPUs could grant: more GPUs than
  // are healthy, a named GPU that is not, or more free memory than the
  // GPUs have in all.
  Result<int64_t> Submit(const Caller& caller, LeaseRequest request, const std::vector<GpuSlot>& gpus,
                         TimePoint now);

  // One scheduling decision over `gpus` (as read now; leases are applied
  // here): grants become leases, in grant order. Requests for whole GPUs
  // go through Schedule; requests for a MIG instance then take free
  // instances (PickMigInstance) in priority, then arrival order; one of
  // another priority than backfill that finds none free takes an instance
  // of what it asks for from a backfill lease (one already being revoked
  // first) and waits for it (kPreempting). Backfill leases the decision
  // preempts are marked revoking (last_decision().preemptions names them).
  // Also fills `last_decision`. `keep_for_head_after`: as Schedule's.
  std::vector<Lease> Decide(const std::vector<GpuSlot>& gpus, TimePoint now,
                            std::chrono::milliseconds keep_for_head_after = std::chrono::milliseconds(0));

  // Grants queued backfill request `request_id` (one whole GPU, none
  // named) as a loan on GPU `gpu` of lease `lender_id` (whole GPUs, not
  // backfill, lending nothing on that GPU yet), in `lent_memory_bytes`.
  // Returns the loan. kNotFound for either id; kFailedPrecondition when
  // either does not qualify.
  Result<Lease> Lend(int64_t request_id, int64_t lender_id, int gpu, int64_t lent_memory_bytes,
                     TimePoint now);
  // The loan on GPU `gpu` of lease `lender_id`, if any.
  const Lease* LoanOf(int64_t lender_id, int gpu) const;

  // Marks backfill lease `lease_id` revoking from `now` for queued request
  // `for_request` (0: for a claim of another scheduler). False when there is
  // no such lease, it is not backfill, or it is being revoked already.
  bool Revoke(int64_t lease_id, int64_t for_request, TimePoint now);

  // Ends a lease and charges its GPU-seconds. kNotFound; kPermissionDenied
  // unless the caller owns it or is an admin.
  Status Release(const Caller& caller, int64_t lease_id, TimePoint now);
  // Removes a queued request. Same errors.
  Status Cancel(const Caller& caller, int64_t request_id);
  // Moves a lease's end by `by` (> 0; a lease without an end gets one from
  // now). Same errors, and kInvalidArgument past kMaxLeaseTime from now.
  Status Extend(const Caller& caller, int64_t lease_id, std::chrono::seconds by, TimePoint now);

  // Leases whose end has passed at `now`, oldest end first.
  std::vector<int64_t> Expired(TimePoint now) const;

  // Records GPUs that another authority (the kubelet) has already handed
  // out: a lease granted now, outside the queue, on exactly `uuids` (GPU
  // UUIDs, or one MIG instance's UUID).
  // kInvalidArgument for an empty, repeated or unknown UUID;
  // kFailedPrecondition when a device named, or its GPU or one of its
  // instances, is in a lease already (Occupant). Returns its id.
  Result<int64_t> Hold(const Caller& owner, Lease lease, const std::vector<GpuSlot>& gpus, TimePoint now);
  // Changes who a held lease is for (a pod once the kubelet names it).
  void SetOwner(int64_t lease_id, std::string user, std::string command) {
    if (auto it = leases_.find(lease_id); it != leases_.end()) {
      it->second.user = std::move(user);
      it->second.command = std::move(command);
    }
  }
  // Sets a granted lease's token (the agent makes one per grant).
  void SetToken(int64_t lease_id, std::string token) {
    if (auto it = leases_.find(lease_id); it != leases_.end()) it->second.token = std::move(token);
  }
  // Sets since when a lease has been idle (empty: it is active).
  void SetIdleSince(int64_t lease_id, std::optional<TimePoint> since) {
    if (auto it = leases_.find(lease_id); it != leases_.end()) it->second.idle_since = since;
  }
  // Ids are never handed out twice: makes the next id at least `next_id`
  // (after a change was taken back because it could not be saved).
  void ReserveIdsBelow(int64_t next_id) { next_id_ = std::max(next_id_, next_id); }
  // Sets a granted lease's job. kNotFound; kPermissionDenied as Release.
  Status AttachJob(const Caller& caller, int64_t lease_id, ProcessRef job);

  // Puts back state saved from leases(), queue(), next_id() and share()
  // (after a restart). Replaces what the book holds.
  void Restore(std::vector<Lease> leases, std::vector<Pending> queue, int64_t next_id, FairShare share);

  // The lease holding GPU `gpu_index` (mig_uuid empty) or its instance
  // `mig_uuid`, or a device above or below it: a whole GPU is held by a
  // lease of it or of any of its instances, an instance by a lease of it
  // or of its whole GPU. The one occupancy question every grant asks.
  std::optional<int64_t> Occupant(int gpu_index, const std::string& mig_uuid) const;

  // Marks what leases hold as leased: a whole GPU and all its instances; a
  // MIG lease's instance and its GPU (which is then never free whole).
  void MarkLeased(std::vector<GpuSlot>* gpus) const;

  // Empty when every GPU and MIG instance is in at most one lease, no GPU
  // is leased whole while an instance of it is leased, and no lease names
  // a device twice; otherwise what is wrong.
  std::string CheckInvariants() const;

  const std::map<int64_t, Lease>& leases() const { return leases_; }
  const std::vector<Pending>& queue() const { return queue_; }
  const Decision& last_decision() const { return last_decision_; }
  const FairShare& share() const { return share_; }
  int64_t next_id() const { return next_id_; }
  // The lease or queued request with `id`; null when none.
  const Lease* FindLease(int64_t id) const;
  const Pending* FindPending(int64_t id) const;

 private:
  // The lease a queued request becomes on `gpus` at `now` (no UUIDs yet).
  static Lease LeaseOf(const Pending& p, std::vector<int> gpus, TimePoint now);
  Status Authorize(const Caller& caller, int64_t owner_uid, const char* what, int64_t id) const;
  // The MIG requests' part of Decide: (request id, instance) per grant, the
  // instances marked leased in `gpus`; those left waiting are added to
  // last_decision_.waiting.
  std::vector<std::pair<int64_t, MigPick>> DecideMig(std::vector<GpuSlot>* gpus);

  FairShare share_;
  int64_t next_id_ = 1;
  std::map<int64_t, Lease> leases_;
  std::vector<Pending> queue_;  // Arrival order.
  Decision last_decision_;
};

}  // namespace tarmac::sched
