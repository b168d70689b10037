// SPDX-License-Identifier: Apache-2.0
#include "sched/lease_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/units.h"
#include "nvidia/mig_profiles.h"
#include "nvidia/vendor_facts.h"
#include "sched/mig_placement.h"

namespace tarmac::sched {
namespace {

Status CheckDuration(const char* name, const std::optional<std::chrono::seconds>& d) {
  if (!d) return Status::OK();
  if (d->count() <= 0) return Status::InvalidArgument(fmt::format("{} must be positive", name));
  if (*d > kMaxLeaseTime) {
    return Status::InvalidArgument(
        fmt::format("{} must be at most {} days", name, kMaxLeaseTime.count() / 24));
  }
  return Status::OK();
}

std::string Plural(int n, const char* one) { return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s"); }

// A request no state of these GPUs could ever grant (until one is repaired
// or replaced): refused at once rather than queued forever.
Status CheckCanFit(const GpuWants& w, const std::vector<GpuSlot>& gpus) {
  // Healthy, or to drain on evidence an admin's request may override.
  auto is_usable = [&w](const GpuSlot& g) {
    return g.is_healthy || (w.allows_unhealthy && g.is_drain_overridable);
  };
  int healthy = 0;
  int roomy = 0;  // Healthy, with at least the memory asked for in all.
  for (const std::string& uuid : w.uuids) {
    auto g = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& s) { return s.uuid == uuid; });
    if (g != gpus.end() && g->is_mig_enabled) {
      return Status::InvalidArgument(
          fmt::format("can never fit: GPU {} ({}) is in MIG mode; ask for one of its "
                      "instances (--mig PROFILE or --mig-uuid)",
                      g->index, uuid));
    }
  }
  for (const GpuSlot& g : gpus) {
    if (!is_usable(g) || g.is_mig_enabled) continue;
    ++healthy;
    if (g.memory_total_bytes == 0 || g.memory_total_bytes >= w.min_free_memory_bytes) ++roomy;
  }
  int wants = w.uuids.empty() ? w.gpu_count : static_cast<int>(w.uuids.size());
  for (const std::string& uuid : w.uuids) {
    auto g = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& s) { return s.uuid == uuid; });
    if (g != gpus.end() && !is_usable(*g)) {
      return Status::InvalidArgument(
          fmt::format("can never fit: GPU {} ({}) is not healthy", g->index, uuid));
    }
  }
  if (wants > healthy) {
    return Status::InvalidArgument(
        fmt::format("can never fit: {} asked for, but only {} of this machine's {} "
                    "are healthy and not in MIG mode",
                    Plural(wants, "GPU"), healthy, gpus.size()));
  }
  if (wants > roomy) {
    int64_t most = 0;
    for (const GpuSlot& g : gpus) most = std::max(most, is_usable(g) ? g.memory_total_bytes : 0);
    return Status::InvalidArgument(
        fmt::format("can never fit: {} with {} free asked for, but {} of this machine's GPUs {} that much "
                    "memory (the largest has {})",
                    Plural(wants, "GPU"), FormatBytes(w.min_free_memory_bytes), roomy,
                    roomy == 1 ? "has" : "have", FormatBytes(most)));
  }
  return Status::OK();
}

}  // namespace

Result<int64_t> LeaseBook::Submit(const Caller& caller, LeaseRequest request,
                                  const std::vector<GpuSlot>& gpus, TimePoint now) {
  GpuWants& w = request.wants;
  if (WantsMig(w)) {
    if (Status s = CheckMigWants(w, gpus); !s.ok()) return s;
  } else if (w.uuids.empty()) {
    if (w.gpu_count < 1) return Status::InvalidArgument("gpus must be at least 1");
    if (w.gpu_count > static_cast<int>(gpus.size())) {
      return Status::InvalidArgument(
          fmt::format("gpus: {} asked for, but this machine has {}", w.gpu_count, gpus.size()));
    }
  } else {
    std::set<std::string> seen;
    for (const std::string& uuid : w.uuids) {
      if (!seen.insert(uuid).second) return Status::InvalidArgument("gpu: named twice", uuid);
      bool exists = std::any_of(gpus.begin(), gpus.end(), [&](const GpuSlot& g) { return g.uuid == uuid; });
      if (!exists) return Status::InvalidArgument("gpu: no such GPU", uuid);
    }
  }
  if (w.min_free_memory_bytes < 0) return Status::InvalidArgument("min-free-memory must not be negative");
  if (!WantsMig(w)) {
    if (Status never = CheckCanFit(w, gpus); !never.ok()) return never;
  }
  Status s = CheckDuration("max-time", request.max_time);
  if (s.ok()) s = CheckDuration("idle-timeout", request.idle_timeout);
  if (!s.ok()) return s;
  int64_t id = next_id_++;
  queue_.push_back({id, caller, std::move(request), now});
  return id;
}

Lease LeaseBook::LeaseOf(const Pending& p, std::vector<int> gpus, TimePoint now) {
  Lease l;
  l.id = p.id;
  l.uid = p.owner.uid;
  l.user = p.owner.user;
  l.gpus = std::move(gpus);
  l.priority = p.request.priority;
  l.granted_at = now;
  if (p.request.max_time) l.ends_at = now + *p.request.max_time;
  l.idle_timeout = p.request.idle_timeout;
  l.command = p.request.command;
  l.kind = p.request.is_reservation ? node::LeaseKind::kReservation : node::LeaseKind::kRun;
  l.holder = p.request.holder;
  l.request_key = p.request.request_key;
  l.lends_idle = p.request.lends_idle;
  l.yields_at_notice = p.request.yields_at_notice;
  return l;
}

const Lease* LeaseBook::LoanOf(int64_t lender_id, int gpu) const {
  for (const auto& [id, l] : leases_) {
    if (l.lent_from == lender_id && l.gpus == std::vector<int>{gpu}) return &l;
  }
  return nullptr;
}

Result<Lease> LeaseBook::Lend(int64_t request_id, int64_t lender_id, int gpu, int64_t lent_memory_bytes,
                              TimePoint now) {
  auto pending =
      std::find_if(queue_.begin(), queue_.end(), [&](const Pending& p) { return p.id == request_id; });
  auto lender = leases_.find(lender_id);
  if (pending == queue_.end() || lender == leases_.end()) {
    return Status::NotFound(fmt::format("no request {} or lease {}", request_id, lender_id));
  }
  const GpuWants& want = pending->request.wants;
  bool is_one_gpu = want.uuids.empty() && want.mig_profile.empty() && want.gpu_count == 1;
  if (pending->request.priority != Priority::kBackfill || !is_one_gpu ||
      want.min_free_memory_bytes > lent_memory_bytes) {
    return Status::FailedPrecondition(
        fmt::format("request {} is not for one GPU of backfill that fits", request_id));
  }
  const Lease& from = lender->second;
  auto at = std::find(from.gpus.begin(), from.gpus.end(), gpu);
  if (from.priority == Priority::kBackfill || IsLoan(from) || IsMigLease(from) || at == from.gpus.end() ||
      LoanOf(lender_id, gpu) != nullptr) {
    return Status::FailedPrecondition(fmt::format("lease {} cannot lend GPU {}", lender_id, gpu));
  }
  Lease l = LeaseOf(*pending, {gpu}, now);
  const size_t position = static_cast<size_t>(at - from.gpus.begin());
  l.uuids = position < from.uuids.size() ? std::vector<std::string>{from.uuids[position]} : from.uuids;
  l.lent_from = lender_id;
  l.lent_memory_bytes = lent_memory_bytes;
  leases_[l.id] = l;
  queue_.erase(pending);
  return l;
}

bool LeaseBook::Revoke(int64_t lease_id, int64_t for_request, TimePoint now) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end() || it->second.priority != Priority::kBackfill || it->second.revoking_since)
    return false;
  it->second.revoking_since = now;
  it->second.revoked_for = for_request;
  return true;
}

std::vector<Lease> LeaseBook::Decide(const std::vector<GpuSlot>& gpus, TimePoint now,
                                     std::chrono::milliseconds keep_for_head_after) {
  std::vector<GpuSlot> marked = gpus;
  MarkLeased(&marked);
  std::vector<QueuedRequest> queue;
  queue.reserve(queue_.size());
  for (const Pending& p : queue_) {
    if (WantsMig(p.request.wants)) continue;  // After Schedule, below.
    QueuedRequest q;
    q.id = p.id;
    q.uid = p.owner.uid;
    q.priority = p.request.priority;
    q.wants = p.request.wants;
    q.sequence = p.id;
    q.max_time = p.request.max_time;
    q.queued_at = p.submitted_at;
    queue.push_back(std::move(q));
  }
  std::vector<RunningLease> running;
  for (const auto& [id, l] : leases_) {
    if (IsMigLease(l) || IsLoan(l)) continue;  // Holds an instance, not its GPU; or its lender holds it.
    running.push_back({l.gpus, l.ends_at, id, l.priority == Priority::kBackfill, l.revoking_since.has_value(),
                       l.yields_at_notice});
  }
  last_decision_ = Schedule(marked, queue, running, share_, now, keep_for_head_after);
  std::vector<std::pair<int64_t, MigPick>> mig_grants = DecideMig(&marked);
  for (const Preemption& p : last_decision_.preemptions) Revoke(p.lease_id, p.request_id, now);

  // Grants name queued requests; index the queue once rather than search it
  // per grant.
  std::map<int64_t, size_t> position;
  for (size_t i = 0; i < queue_.size(); ++i) position.emplace(queue_[i].id, i);
  std::vector<bool> is_granted(queue_.size(), false);
  std::vector<Lease> granted;
  std::vector<Grant> grants = last_decision_.grants;
  for (const auto& [id, pick] : mig_grants) grants.push_back({id, {pick.gpu}});
  for (size_t n = 0; n < grants.size(); ++n) {
    const Grant& g = grants[n];
    auto found = position.find(g.request_id);
    if (found == position.end() || is_granted[found->second]) continue;
    is_granted[found->second] = true;
    Lease l = LeaseOf(queue_[found->second], g.gpus, now);
    if (n >= last_decision_.grants.size()) {  // A MIG instance.
      const MigPick& pick = mig_grants[n - last_decision_.grants.size()].second;
      l.uuids = {pick.uuid};
      l.mig_profile = pick.profile;
    } else {
      for (int index : g.gpus) l.uuids.push_back(gpus[static_cast<size_t>(index)].uuid);
    }
    leases_[l.id] = l;
    granted.push_back(l);
  }
  if (!granted.empty()) {
    size_t kept = 0;
    for (size_t i = 0; i < queue_.size(); ++i) {
      if (is_granted[i]) continue;
      // Never move an entry onto itself: that empties its fields.
      if (kept != i) queue_[kept] = std::move(queue_[i]);
      ++kept;
    }
    queue_.resize(kept);
  }
  return granted;
}

std::vector<std::pair<int64_t, MigPick>> LeaseBook::DecideMig(std::vector<GpuSlot>* gpus) {
  std::vector<const Pending*> asks;
  for (const Pending& p : queue_) {
    if (WantsMig(p.request.wants)) asks.push_back(&p);
  }
  std::stable_sort(asks.begin(), asks.end(), [](const Pending* a, const Pending* b) {
    return a->request.priority > b->request.priority;
  });
  // Backfill leases on instances, which a request of another priority may
  // take: those already being revoked first (a lease is revoked for one
  // request only), then in lease order.
  std::vector<const Lease*> backfill;
  for (bool revoking : {true, false}) {
    for (const auto& [id, l] : leases_) {
      if (IsMigLease(l) && l.priority == Priority::kBackfill && l.revoking_since.has_value() == revoking) {
        backfill.push_back(&l);
      }
    }
  }
  std::set<int64_t> claimed;  // Backfill leases this decision frees for a request.
  std::vector<std::pair<int64_t, MigPick>> grants;
  int position = static_cast<int>(last_decision_.waiting.size());
  for (const Pending* p : asks) {
    bool is_backfill = p->request.priority == Priority::kBackfill;
    std::optional<MigPick> pick = PickMigInstance(*gpus, p->request.wants, is_backfill);
    if (!pick) {
      const Lease* victim = nullptr;
      for (const Lease* l : backfill) {
        if (is_backfill) break;  // Backfill never revokes backfill.
        int gpu = -1;
        const MigSlot* m = FindMigSlot(*gpus, l->uuids[0], &gpu);
        if (m == nullptr || claimed.count(l->id) != 0 || !(*gpus)[static_cast<size_t>(gpu)].is_healthy)
          continue;
        const GpuWants& w = p->request.wants;
        if (w.uuids.empty() ? m->profile == w.mig_profile : m->uuid == w.uuids[0]) {
          victim = l;
          break;
        }
      }
      if (victim != nullptr) {
        claimed.insert(victim->id);
        if (!victim->revoking_since) last_decision_.preemptions.push_back({victim->id, p->id});
      }
      last_decision_.waiting.push_back(
          {p->id, ++position, victim != nullptr ? WaitReason::kPreempting : WaitReason::kNoFit});
      continue;
    }
    for (MigSlot& m : (*gpus)[static_cast<size_t>(pick->gpu)].mig) m.is_leased |= m.uuid == pick->uuid;
    grants.emplace_back(p->id, std::move(*pick));
  }
  return grants;
}

node::LeaseKind KindOf(const Lease& lease) {
  if (IsExternal(lease.kind)) return lease.kind;
  return lease.priority == Priority::kBackfill ? node::LeaseKind::kBackfill : lease.kind;
}

std::optional<int64_t> LeaseBook::Occupant(int gpu_index, const std::string& mig_uuid) const {
  for (const auto& [id, l] : leases_) {
    bool on_gpu = std::find(l.gpus.begin(), l.gpus.end(), gpu_index) != l.gpus.end();
    if (!on_gpu) continue;
    // A whole GPU is held by a lease of it or of any of its instances; an
    // instance by a lease of itself or of its whole GPU.
    if (mig_uuid.empty() || !IsMigLease(l) || l.uuids[0] == mig_uuid) return id;
  }
  return std::nullopt;
}

Result<int64_t> LeaseBook::Hold(const Caller& owner, Lease lease, const std::vector<GpuSlot>& gpus,
                                TimePoint now) {
  if (lease.uuids.empty()) return Status::InvalidArgument("no GPU named");
  std::set<std::string> seen;
  std::vector<int> indices;
  for (const std::string& uuid : lease.uuids) {
    if (uuid.empty()) return Status::InvalidArgument("gpu: an empty UUID");
    if (!seen.insert(uuid).second) return Status::InvalidArgument("gpu: named twice", uuid);
    if (nvidia::IsMigUuid(uuid)) {  // One MIG instance.
      int parent = -1;
      const MigSlot* m = FindMigSlot(gpus, uuid, &parent);
      if (m == nullptr) return Status::InvalidArgument("mig: no such MIG instance", uuid);
      if (lease.uuids.size() != 1)
        return Status::InvalidArgument("mig: a lease takes one MIG instance", uuid);
      lease.mig_profile = m->profile;
      indices.push_back(parent);
      continue;
    }
    auto g = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& s) { return s.uuid == uuid; });
    if (g == gpus.end()) return Status::InvalidArgument("gpu: no such GPU", uuid);
    indices.push_back(g->index);
  }
  // One occupancy question for every device named: is it, or a device
  // above or below it (its GPU, its instances), held already?
  bool is_mig = nvidia::IsMigUuid(lease.uuids[0]);
  for (size_t i = 0; i < indices.size(); ++i) {
    if (std::optional<int64_t> held = Occupant(indices[i], is_mig ? lease.uuids[0] : std::string())) {
      const Lease& l = leases_.at(*held);
      return Status::FailedPrecondition(
          fmt::format("{} is held: {} lease {} ({}) on {}", lease.uuids[i], LeaseKindName(l), *held, l.user,
                      IsMigLease(l) ? l.uuids[0] : fmt::format("GPU {}", indices[i])));
    }
  }
  lease.id = next_id_++;
  lease.uid = owner.uid;
  if (lease.user.empty()) lease.user = owner.user;
  lease.gpus = std::move(indices);
  lease.granted_at = now;
  leases_[lease.id] = lease;
  return lease.id;
}

Status LeaseBook::Authorize(const Caller& caller, int64_t owner_uid, const char* what, int64_t id) const {
  if (caller.is_admin || caller.uid == owner_uid) return Status::OK();
  return Status::PermissionDenied(fmt::format("{} {} belongs to another user", what, id),
                                  "only its owner or an admin may change it");
}

Status LeaseBook::Release(const Caller& caller, int64_t lease_id, TimePoint now) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return Status::NotFound(fmt::format("no lease {}", lease_id));
  Status s = Authorize(caller, it->second.uid, "lease", lease_id);
  if (!s.ok()) return s;
  double held_s = std::chrono::duration<double>(now - it->second.granted_at).count();
  // A MIG instance counts for its share of the GPU's compute (slices of 7).
  double gpus_held = IsMigLease(it->second) ? nvidia::MigComputeSlicesOf(it->second.mig_profile) /
                                                  static_cast<double>(nvidia::kMigComputeSlices)
                                            : static_cast<double>(it->second.gpus.size());
  share_.Charge(it->second.uid, std::max(0.0, held_s) * gpus_held, now);
  // A loan on its GPU becomes an ordinary backfill lease: the GPU is its own.
  for (auto& [id, l] : leases_) {
    if (l.lent_from == lease_id) l.lent_from = 0;
  }
  leases_.erase(it);
  return Status::OK();
}

Status LeaseBook::Cancel(const Caller& caller, int64_t request_id) {
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Pending& p) { return p.id == request_id; });
  if (it == queue_.end()) return Status::NotFound(fmt::format("no queued request {}", request_id));
  Status s = Authorize(caller, it->owner.uid, "request", request_id);
  if (!s.ok()) return s;
  queue_.erase(it);
  return Status::OK();
}

Status LeaseBook::Extend(const Caller& caller, int64_t lease_id, std::chrono::seconds by, TimePoint now) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return Status::NotFound(fmt::format("no lease {}", lease_id));
  Status s = Authorize(caller, it->second.uid, "lease", lease_id);
  if (!s.ok()) return s;
  if (by.count() <= 0) return Status::InvalidArgument("the time to add must be positive");
  TimePoint end = it->second.ends_at.value_or(now) + by;
  if (end - now > kMaxLeaseTime) {
    return Status::InvalidArgument(
        fmt::format("a lease may end at most {} days ahead", kMaxLeaseTime.count() / 24));
  }
  it->second.ends_at = end;
  return Status::OK();
}

Status LeaseBook::AttachJob(const Caller& caller, int64_t lease_id, ProcessRef job) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return Status::NotFound(fmt::format("no lease {}", lease_id));
  Status s = Authorize(caller, it->second.uid, "lease", lease_id);
  if (!s.ok()) return s;
  it->second.job = job;
  return Status::OK();
}

void LeaseBook::Restore(std::vector<Lease> leases, std::vector<Pending> queue, int64_t next_id,
                        FairShare share) {
  leases_.clear();
  for (Lease& l : leases) {
    next_id = std::max(next_id, l.id + 1);
    leases_[l.id] = std::move(l);
  }
  std::sort(queue.begin(), queue.end(), [](const Pending& a, const Pending& b) { return a.id < b.id; });
  for (const Pending& p : queue) next_id = std::max(next_id, p.id + 1);
  queue_ = std::move(queue);
  next_id_ = std::max<int64_t>(next_id, 1);
  share_ = std::move(share);
}

const Lease* LeaseBook::FindLease(int64_t id) const {
  auto it = leases_.find(id);
  return it == leases_.end() ? nullptr : &it->second;
}

const Pending* LeaseBook::FindPending(int64_t id) const {
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Pending& p) { return p.id == id; });
  return it == queue_.end() ? nullptr : &*it;
}

std::vector<int64_t> LeaseBook::Expired(TimePoint now) const {
  std::vector<std::pair<TimePoint, int64_t>> ended;
  for (const auto& [id, l] : leases_) {
    if (l.ends_at && *l.ends_at <= now) ended.emplace_back(*l.ends_at, id);
  }
  std::sort(ended.begin(), ended.end());
  std::vector<int64_t> ids;
  for (const auto& [at, id] : ended) ids.push_back(id);
  return ids;
}

void LeaseBook::MarkLeased(std::vector<GpuSlot>* gpus) const {
  // One occupancy: a leased instance makes its GPU leased (never granted
  // whole), a GPU leased whole makes each of its instances leased.
  for (const auto& [id, l] : leases_) {
    for (int index : l.gpus) {
      if (index < 0 || index >= static_cast<int>(gpus->size())) continue;
      GpuSlot& g = (*gpus)[static_cast<size_t>(index)];
      g.is_leased = true;
      for (MigSlot& m : g.mig) m.is_leased |= !IsMigLease(l) || m.uuid == l.uuids[0];
    }
  }
}

std::string LeaseBook::CheckInvariants() const {
  std::map<int, int64_t> holder;
  std::map<std::string, int64_t> instance_holder;
  std::map<int, int64_t> split;                        // GPUs with a leased instance.
  std::map<std::pair<int64_t, int>, int64_t> loan_on;  // (lender, GPU) -> its loan.
  for (const auto& [id, l] : leases_) {
    if (IsMigLease(l)) {
      auto [it, is_new] = instance_holder.emplace(l.uuids[0], id);
      if (!is_new)
        return fmt::format("MIG instance {} is in lease {} and lease {}", l.uuids[0], it->second, id);
      for (int index : l.gpus) split.emplace(index, id);
      continue;
    }
    if (IsLoan(l)) {  // Beside its lender, on one of its GPUs, alone there.
      auto lender = leases_.find(l.lent_from);
      if (lender == leases_.end() || l.gpus.size() != 1 ||
          std::find(lender->second.gpus.begin(), lender->second.gpus.end(), l.gpus[0]) ==
              lender->second.gpus.end()) {
        return fmt::format("loan {} is not on a GPU of its lender {}", id, l.lent_from);
      }
      if (auto [it, is_new] = loan_on.emplace(std::make_pair(l.lent_from, l.gpus[0]), id); !is_new) {
        return fmt::format("GPU {} of lease {} is lent twice (loans {} and {})", l.gpus[0], l.lent_from,
                           it->second, id);
      }
      continue;
    }
    for (int index : l.gpus) {
      auto [it, is_new] = holder.emplace(index, id);
      if (!is_new) return fmt::format("gpu {} is in lease {} and lease {}", index, it->second, id);
    }
  }
  for (const auto& [index, id] : split) {
    if (auto whole = holder.find(index); whole != holder.end()) {
      return fmt::format("gpu {} is leased whole (lease {}) and an instance of it too (lease {})", index,
                         whole->second, id);
    }
  }
  return {};
}

}  // namespace tarmac::sched
