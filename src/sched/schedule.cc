// SPDX-License-Identifier: Apache-2.0
#include "sched/schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace tarmac::sched {
namespace {

using Clock = std::chrono::steady_clock;

int CountFree(const std::vector<GpuSlot>& gpus, const Overrides& overrides) {
  int n = 0;
  for (size_t i = 0; i < gpus.size(); ++i) n += IsFree(gpus[i], 0, overrides[i]) ? 1 : 0;
  return n;
}

int Needs(const GpuWants& wants) {
  return wants.uuids.empty() ? wants.gpu_count : static_cast<int>(wants.uuids.size());
}

// The queue in decision order: priority (high first), the user's rank by
// recent use (least first), arrival. The queue is already in arrival order,
// so a stable counting sort on (priority, user rank) gives it in O(n).
std::vector<const QueuedRequest*> Order(const std::vector<QueuedRequest>& queue, const FairShare& share,
                                        Clock::time_point now) {
  std::unordered_map<int64_t, size_t> user_of_uid;
  std::vector<int64_t> uids;
  std::vector<size_t> request_user(queue.size());
  for (size_t i = 0; i < queue.size(); ++i) {
    auto [it, is_new] = user_of_uid.emplace(queue[i].uid, uids.size());
    if (is_new) uids.push_back(queue[i].uid);
    request_user[i] = it->second;
  }
  std::vector<std::pair<double, size_t>> by_use;  // (usage, user), least first.
  for (size_t u = 0; u < uids.size(); ++u) by_use.emplace_back(share.Usage(uids[u], now), u);
  std::sort(by_use.begin(), by_use.end());
  std::vector<size_t> rank(uids.size());
  for (size_t r = 0; r < by_use.size(); ++r) rank[by_use[r].second] = r;

  constexpr size_t kPriorities = 4;
  std::vector<size_t> start(kPriorities * uids.size() + 1, 0);
  std::vector<size_t> bucket(queue.size());
  for (size_t i = 0; i < queue.size(); ++i) {
    size_t priority_rank = kPriorities - 1 - static_cast<size_t>(queue[i].priority);
    bucket[i] = priority_rank * uids.size() + rank[request_user[i]];
    start[bucket[i] + 1]++;
  }
  for (size_t b = 0; b + 1 < start.size(); ++b) start[b + 1] += start[b];
  std::vector<const QueuedRequest*> order(queue.size());
  for (size_t i = 0; i < queue.size(); ++i) order[start[bucket[i]]++] = &queue[i];
  return order;
}

// `g` as it will be once its lease has ended: unleased, its memory free
// (once the lease's processes are gone).
void Vacate(GpuSlot* g) {
  g->is_leased = false;
  if (g->memory_total_bytes > 0) g->memory_free_bytes = g->memory_total_bytes;
}

// The GPUs `head` would get were every running lease and every process
// outside one gone (`taken` stays taken; a GPU to drain or in MIG mode is
// never counted on): kept for it as they free up when no lease end can be
// planned on. Where the placement is as good, the GPUs free now come
// first, so that it waits on as few leases as can serve it.
std::vector<int> KeepForHead(const std::vector<GpuSlot>& gpus, const Overrides& taken, const GpuWants& head) {
  std::vector<GpuSlot> view = gpus;
  std::stable_partition(view.begin(), view.end(), [&](const GpuSlot& g) {
    return IsFree(g, head.min_free_memory_bytes, taken[static_cast<size_t>(g.index)]);
  });
  for (GpuSlot& g : view) {
    Vacate(&g);
    g.has_foreign_processes = false;  // (Also what a lease just let go may leave for a reading.)
    g.is_busy = false;
  }
  return PickGpus(view, head, taken).value_or(std::vector<int>{});
}

// When, and on which GPUs, `head` can start as running leases end, if
// nothing else starts: the earliest lease end after which it fits. With no
// such end and `keeps`, the GPUs kept for it (KeepForHead), from no time.
void Reserve(const std::vector<GpuSlot>& gpus, const Overrides& taken,
             const std::vector<RunningLease>& leases, const GpuWants& head, bool keeps, Decision* decision) {
  Overrides future = taken;
  std::vector<const RunningLease*> ending;
  for (const RunningLease& l : leases) {
    if (l.ends_at) ending.push_back(&l);
  }
  std::sort(ending.begin(), ending.end(),
            [](const RunningLease* a, const RunningLease* b) { return *a->ends_at < *b->ends_at; });
  int free = CountFree(gpus, future);
  int needs = Needs(head);
  for (const RunningLease* l : ending) {
    for (int index : l->gpus) {
      if (index < 0 || index >= static_cast<int>(future.size())) continue;
      Override& o = future[static_cast<size_t>(index)];
      if (o != Override::kNone) continue;
      o = Override::kReleased;
      if (IsFree(gpus[static_cast<size_t>(index)], 0, o)) free++;
    }
    if (free < needs) continue;
    if (std::optional<std::vector<int>> picked = PickGpus(gpus, head, future)) {
      decision->reserved_gpus = *picked;
      decision->reserved_from = *l->ends_at;
      return;
    }
  }
  if (keeps) decision->reserved_gpus = KeepForHead(gpus, taken, head);
}

// Placement attempts that failed since the GPUs last changed: a request
// for at least as many GPUs with at least as much memory fails too, so it
// is not tried again (most of a long queue, once the GPUs are taken).
class Misses {
 public:
  bool Covers(const GpuWants& w) const {
    if (!w.uuids.empty() || w.allows_unhealthy) return false;  // (More GPUs may serve it.)
    for (const GpuWants& m : misses_) {
      if (w.gpu_count >= m.gpu_count && w.min_free_memory_bytes >= m.min_free_memory_bytes) return true;
    }
    return false;
  }
  void Add(const GpuWants& w) {
    if (w.uuids.empty() && !w.allows_unhealthy) misses_.push_back(w);
  }

 private:
  std::vector<GpuWants> misses_;
};

// GPUs that backfill leases hold, as a request above backfill may take them:
// a copy of the GPUs where those are unleased and their memory counts as
// free (it will be once the lease's processes are gone).
class Reclaim {
 public:
  Reclaim(const std::vector<GpuSlot>& gpus, const std::vector<RunningLease>& leases) {
    for (const RunningLease& l : leases) {
      if (!l.is_backfill) continue;
      for (int index : l.gpus) {
        if (index >= 0 && index < static_cast<int>(gpus.size())) holder_.emplace(index, &l);
      }
    }
    if (holder_.empty()) return;
    // A GPU whose holder has just ended (a lender that let go) is claimed
    // from the backfill lease on it at once: what the holder left is on its
    // way out, and the revocation runs while a reading confirms it.
    view_ = gpus;
    for (GpuSlot& g : view_) {
      if (holder_.count(g.index) == 0) continue;
      Vacate(&g);
      if (g.is_emptying) g.has_foreign_processes = false;
    }
    // Ties go to the GPUs listed first (PickGpus): the free ones, so that a
    // request waits on as few revocations as can serve it; then those of
    // batches that stop on notice (milliseconds), before backfill that may
    // take its grace.
    auto soonest = [this](const GpuSlot& g) {
      auto it = holder_.find(g.index);
      return it == holder_.end() ? 0 : it->second->yields_at_notice ? 1 : 2;
    };
    std::stable_sort(view_.begin(), view_.end(),
                     [&soonest](const GpuSlot& a, const GpuSlot& b) { return soonest(a) < soonest(b); });
  }

  // GPUs for `wants` among the free ones and those of backfill leases, as
  // `taken` leaves them: first with only the leases already being revoked,
  // then with all. Adds each lease newly to revoke to `decision`.
  std::optional<std::vector<int>> Pick(const GpuWants& wants, const Overrides& taken, int64_t request_id,
                                       Decision* decision) {
    if (holder_.empty() || missed_.Covers(wants)) return std::nullopt;
    for (bool is_any_lease : {false, true}) {
      Overrides o = taken;
      o.resize(view_.size(), Override::kNone);
      for (const auto& [index, lease] : holder_) {
        bool is_spoken_for = lease->is_revoking || revoked_.count(lease->id) > 0;
        if (!is_any_lease && !is_spoken_for) o[static_cast<size_t>(index)] = Override::kTaken;
      }
      std::optional<std::vector<int>> picked = PickGpus(view_, wants, o);
      if (!picked) continue;
      for (int index : *picked) {
        auto it = holder_.find(index);
        if (it == holder_.end() || it->second->is_revoking) continue;
        if (revoked_.insert(it->second->id).second)
          decision->preemptions.push_back({it->second->id, request_id});
      }
      return picked;
    }
    missed_.Add(wants);
    return std::nullopt;
  }

 private:
  std::map<int, const RunningLease*> holder_;  // GPU index -> the backfill lease on it.
  std::vector<GpuSlot> view_;
  std::set<int64_t> revoked_;  // Leases revoked in this decision.
  Misses missed_;
};

// Marks `picked` as taken in this decision (and outside the head's
// reservation, when there is a head), counting the free GPUs it used: every
// grant and every claim of GPUs for a preempting request goes through here.
void Take(const std::vector<GpuSlot>& gpus, const std::vector<int>& picked, Overrides* taken, int* free_count,
          Overrides* outside, int* free_outside) {
  for (int index : picked) {
    size_t i = static_cast<size_t>(index);
    if (IsFree(gpus[i], 0, (*taken)[i])) --*free_count;
    (*taken)[i] = Override::kTaken;
    if (outside != nullptr && !outside->empty()) {
      if (IsFree(gpus[i], 0, (*outside)[i])) --*free_outside;
      (*outside)[i] = Override::kTaken;
    }
  }
}

}  // namespace

Decision Schedule(const std::vector<GpuSlot>& gpus, const std::vector<QueuedRequest>& queue,
                  const std::vector<RunningLease>& leases, const FairShare& share, Clock::time_point now,
                  std::chrono::milliseconds keep_for_head_after) {
  Decision decision;
  decision.waiting.reserve(queue.size());
  Overrides taken(gpus.size(), Override::kNone);  // Granted in this decision.
  Overrides outside;  // `taken` plus the head's reservation, once there is a head.
  int free_count = CountFree(gpus, taken);
  int free_outside = 0;
  bool has_head = false;
  int position = 0;
  Misses missed_outside;  // Against `outside`.
  Misses missed_any;      // Against `taken`.
  Misses missed_backfill;
  Reclaim reclaim(gpus, leases);
  Overrides no_backfill(gpus.size(), Override::kNone);  // kTaken where backfill may not start.
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!gpus[i].accepts_backfill) no_backfill[i] = Override::kTaken;
  }
  for (const QueuedRequest* request : Order(queue, share, now)) {
    const QueuedRequest& r = *request;
    int needs = Needs(r.wants);
    if (r.priority == Priority::kBackfill) {
      // Last in the order: on free GPUs that accept backfill, outside the
      // head's reservation (GPUs kept with no start time excepted: backfill
      // there yields when the head fits); never a head itself.
      bool avoids_reserved = has_head && decision.reserved_from.has_value();
      const Overrides& base = avoids_reserved ? outside : taken;
      std::optional<std::vector<int>> picked;
      if (needs <= (avoids_reserved ? free_outside : free_count) && !missed_backfill.Covers(r.wants)) {
        Overrides o = no_backfill;
        for (size_t i = 0; i < o.size() && i < base.size(); ++i) {
          if (base[i] != Override::kNone) o[i] = base[i];
        }
        picked = PickGpus(gpus, r.wants, o);
        if (!picked) missed_backfill.Add(r.wants);
      }
      if (!picked) {
        decision.waiting.push_back({r.id, ++position, WaitReason::kNoFit});
        continue;
      }
      Take(gpus, *picked, &taken, &free_count, has_head ? &outside : nullptr, &free_outside);
      decision.grants.push_back({r.id, std::move(*picked)});
      continue;
    }
    if (!has_head) {
      // (An admin's request that allows unhealthy GPUs may find more than
      // the healthy free count: placement judges it.)
      if (needs <= free_count || r.wants.allows_unhealthy) {
        if (std::optional<std::vector<int>> picked = PickGpus(gpus, r.wants, taken)) {
          Take(gpus, *picked, &taken, &free_count, nullptr, &free_outside);
          decision.grants.push_back({r.id, std::move(*picked)});
          continue;
        }
      }
      if (std::optional<std::vector<int>> picked = reclaim.Pick(r.wants, taken, r.id, &decision)) {
        Take(gpus, *picked, &taken, &free_count, nullptr, &free_outside);
        decision.waiting.push_back({r.id, ++position, WaitReason::kPreempting});
        continue;
      }
      has_head = true;
      decision.waiting.push_back({r.id, ++position, WaitReason::kNoFit});
      bool keeps = keep_for_head_after.count() > 0 && now - r.queued_at >= keep_for_head_after;
      Reserve(gpus, taken, leases, r.wants, keeps, &decision);
      outside = taken;
      for (int index : decision.reserved_gpus) outside[static_cast<size_t>(index)] = Override::kTaken;
      free_outside = CountFree(gpus, outside);
      continue;
    }
    // Backfill, never delaying the head: outside its reservation, or on
    // reserved GPUs only when the request ends before the head starts.
    bool ends_in_time = decision.reserved_from && r.max_time && now + *r.max_time <= *decision.reserved_from;
    bool may_use_reserved = ends_in_time || decision.reserved_gpus.empty();
    std::optional<std::vector<int>> picked;
    if ((needs <= free_outside || r.wants.allows_unhealthy) && !missed_outside.Covers(r.wants)) {
      picked = PickGpus(gpus, r.wants, outside);
      if (!picked) missed_outside.Add(r.wants);
    }
    if (!picked && may_use_reserved && (needs <= free_count || r.wants.allows_unhealthy) &&
        !missed_any.Covers(r.wants)) {
      picked = PickGpus(gpus, r.wants, taken);
      if (!picked) missed_any.Add(r.wants);
    }
    if (!picked) {
      if (std::optional<std::vector<int>> reclaimed = reclaim.Pick(r.wants, outside, r.id, &decision)) {
        Take(gpus, *reclaimed, &taken, &free_count, &outside, &free_outside);
        decision.waiting.push_back({r.id, ++position, WaitReason::kPreempting});
        continue;
      }
      decision.waiting.push_back({r.id, ++position, WaitReason::kBehindHead});
      continue;
    }
    Take(gpus, *picked, &taken, &free_count, &outside, &free_outside);
    decision.grants.push_back({r.id, std::move(*picked)});
    // The misses stay valid: with fewer free GPUs, what failed still fails.
  }
  return decision;
}

}  // namespace tarmac::sched
