// SPDX-License-Identifier: Apache-2.0
#include "sched/lease_book.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/units.h"

namespace tarmac::sched {
namespace {

Status CheckDuration(const char* name, const std::optional<std::chrono::seconds>& d) {
  if (!d) return Status::OK();
  if (d->count() <= 0) return Status::InvalidArgument(fmt::format("{} must be positive", name));
  if (*d > kMaxLeaseTime) {
    return Status::InvalidArgument(fmt::format("{} must be at most {} days", name, kMaxLeaseTime.count() / 24));
  }
  return Status::OK();
}

std::string Plural(int n, const char* one) { return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s"); }

// A request no state of these GPUs could ever grant (until one is repaired
// or replaced): refused at once rather than queued forever.
Status CheckCanFit(const GpuWants& w, const std::vector<GpuSlot>& gpus) {
  int healthy = 0;
  int roomy = 0;  // Healthy, with at least the memory asked for in all.
  for (const GpuSlot& g : gpus) {
    if (!g.is_healthy) continue;
    ++healthy;
    if (g.memory_total_bytes == 0 || g.memory_total_bytes >= w.min_free_memory_bytes) ++roomy;
  }
  int wants = w.uuids.empty() ? w.gpu_count : static_cast<int>(w.uuids.size());
  for (const std::string& uuid : w.uuids) {
    auto g = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& s) { return s.uuid == uuid; });
    if (g != gpus.end() && !g->is_healthy) {
      return Status::InvalidArgument(fmt::format("can never fit: GPU {} ({}) is not healthy", g->index, uuid));
    }
  }
  if (wants > healthy) {
    return Status::InvalidArgument(fmt::format("can never fit: {} asked for, but only {} of this machine's {} "
                                                  "are healthy",
                                                  Plural(wants, "GPU"), healthy, gpus.size()));
  }
  if (wants > roomy) {
    int64_t most = 0;
    for (const GpuSlot& g : gpus) most = std::max(most, g.is_healthy ? g.memory_total_bytes : 0);
    return Status::InvalidArgument(
        fmt::format("can never fit: {} with {} free asked for, but {} of this machine's GPUs {} that much "
                    "memory (the largest has {})",
                    Plural(wants, "GPU"), FormatBytes(w.min_free_memory_bytes), roomy, roomy == 1 ? "has" : "have",
                    FormatBytes(most)));
  }
  return Status::OK();
}

}  // namespace

Result<int64_t> LeaseBook::Submit(const Caller& caller, LeaseRequest request, const std::vector<GpuSlot>& gpus,
                                  TimePoint now) {
  GpuWants& w = request.wants;
  if (w.uuids.empty()) {
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
  if (Status never = CheckCanFit(w, gpus); !never.ok()) return never;
  Status s = CheckDuration("max-time", request.max_time);
  if (s.ok()) s = CheckDuration("idle-timeout", request.idle_timeout);
  if (!s.ok()) return s;
  int64_t id = next_id_++;
  queue_.push_back({id, caller, std::move(request), now});
  return id;
}

std::vector<Lease> LeaseBook::Decide(const std::vector<GpuSlot>& gpus, TimePoint now) {
  std::vector<GpuSlot> marked = gpus;
  MarkLeased(&marked);
  std::vector<QueuedRequest> queue;
  queue.reserve(queue_.size());
  for (const Pending& p : queue_) {
    QueuedRequest q;
    q.id = p.id;
    q.uid = p.owner.uid;
    q.priority = p.request.priority;
    q.wants = p.request.wants;
    q.sequence = p.id;
    q.max_time = p.request.max_time;
    queue.push_back(std::move(q));
  }
  std::vector<RunningLease> running;
  for (const auto& [id, l] : leases_) {
    running.push_back({l.gpus, l.ends_at, id, l.priority == Priority::kBackfill, l.revoking_since.has_value()});
  }
  last_decision_ = Schedule(marked, queue, running, share_, now);
  for (const Preemption& p : last_decision_.preemptions) {
    auto it = leases_.find(p.lease_id);
    if (it == leases_.end() || it->second.revoking_since) continue;
    it->second.revoking_since = now;
    it->second.revoked_for = p.request_id;
  }

  // Grants name queued requests; index the queue once rather than search it
  // per grant.
  std::map<int64_t, size_t> position;
  for (size_t i = 0; i < queue_.size(); ++i) position.emplace(queue_[i].id, i);
  std::vector<bool> is_granted(queue_.size(), false);
  std::vector<Lease> granted;
  for (const Grant& g : last_decision_.grants) {
    auto found = position.find(g.request_id);
    if (found == position.end() || is_granted[found->second]) continue;
    is_granted[found->second] = true;
    const Pending* it = &queue_[found->second];
    Lease l;
    l.id = it->id;
    l.uid = it->owner.uid;
    l.user = it->owner.user;
    l.gpus = g.gpus;
    for (int index : g.gpus) l.uuids.push_back(gpus[static_cast<size_t>(index)].uuid);
    l.priority = it->request.priority;
    l.granted_at = now;
    if (it->request.max_time) l.ends_at = now + *it->request.max_time;
    l.idle_timeout = it->request.idle_timeout;
    l.command = it->request.command;
    l.is_reservation = it->request.is_reservation;
    l.holder = it->request.holder;
    l.request_key = it->request.request_key;
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

const char* LeaseKindName(const Lease& lease) {
  if (lease.is_pod) return "pod";
  if (!lease.slurm_job.empty()) return "slurm";
  return lease.is_reservation ? "reservation" : "run";
}

Result<int64_t> LeaseBook::Hold(const Caller& owner, Lease lease, const std::vector<GpuSlot>& gpus, TimePoint now) {
  if (lease.uuids.empty()) return Status::InvalidArgument("no GPU named");
  std::set<std::string> seen;
  std::vector<int> indices;
  for (const std::string& uuid : lease.uuids) {
    if (!seen.insert(uuid).second) return Status::InvalidArgument("gpu: named twice", uuid);
    auto g = std::find_if(gpus.begin(), gpus.end(), [&](const GpuSlot& s) { return s.uuid == uuid; });
    if (g == gpus.end()) return Status::InvalidArgument("gpu: no such GPU", uuid);
    indices.push_back(g->index);
  }
  for (const auto& [id, l] : leases_) {
    for (const std::string& uuid : lease.uuids) {
      if (std::find(l.uuids.begin(), l.uuids.end(), uuid) != l.uuids.end()) {
        return Status::FailedPrecondition(fmt::format("GPU {} is in lease {} ({})", uuid, id, l.user));
      }
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
  share_.Charge(it->second.uid, std::max(0.0, held_s) * static_cast<double>(it->second.gpus.size()), now);
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
  if (by.count() <= 0) return Status::InvalidArgument("extend: the time to add must be positive");
  TimePoint end = it->second.ends_at.value_or(now) + by;
  if (end - now > kMaxLeaseTime) {
    return Status::InvalidArgument(fmt::format("extend: a lease may end at most {} days ahead", kMaxLeaseTime.count() / 24));
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

void LeaseBook::Restore(std::vector<Lease> leases, std::vector<Pending> queue, int64_t next_id, FairShare share) {
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
  for (const auto& [id, l] : leases_) {
    for (int index : l.gpus) {
      if (index >= 0 && index < static_cast<int>(gpus->size())) (*gpus)[static_cast<size_t>(index)].is_leased = true;
    }
  }
}

std::string LeaseBook::CheckInvariants() const {
  std::map<int, int64_t> holder;
  for (const auto& [id, l] : leases_) {
    for (int index : l.gpus) {
      auto [it, is_new] = holder.emplace(index, id);
      if (!is_new) return fmt::format("gpu {} is in lease {} and lease {}", index, it->second, id);
    }
  }
  return {};
}

}  // namespace tarmac::sched
