// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_answers.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/units.h"
#include "leases/lease_text.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

json EndedJson(const RequestMemory::Ended& e) {
  json j = {{"state", "ended"}, {"reason", e.why}};
  if (!e.kind.empty()) j["ended_by"] = e.kind;
  return j;
}

Result<json> LeaseStateJson(const LeaseCore& core, int64_t id, const sched::Caller& viewer, TimePoint now) {
  if (const sched::Lease* l = core.book.FindLease(id)) {
    return json{{"state", "granted"}, {"lease", LeaseJson(core, *l, viewer, now)}};
  }
  if (const sched::Pending* p = core.book.FindPending(id))
    return json{{"state", "queued"}, {"request", QueuedJson(core, *p, now)}};
  if (const RequestMemory::Ended* ended = core.memory.FindEnded(id)) return EndedJson(*ended);
  return Status::NotFound(fmt::format("no lease or queued request {}", id));
}

json LeaseJson(const LeaseCore& core, const sched::Lease& l, const sched::Caller& viewer, TimePoint now) {
  return sched::LeaseShownToJson(ShowLease(core, l, viewer, now), core.Base());
}

sched::LeaseShown ShowLease(const LeaseCore& core, const sched::Lease& l, const sched::Caller& viewer,
                            TimePoint now) {
  sched::LeaseShown shown;
  shown.lease = l;
  shown.lease.request_key.clear();
  if (!viewer.is_admin && viewer.uid != l.uid) shown.lease.token.clear();
  shown.held_seconds = duration_cast<seconds>(now - l.granted_at).count();
  shown.idle_seconds =
      l.idle_since ? std::max<int64_t>(0, duration_cast<seconds>(now - *l.idle_since).count()) : 0;
  if (l.revoking_since)
    shown.revoke_by_unix = core.Base().ToUnix(*l.revoking_since + core.policy.backfill.grace);
  if (auto rt = core.runtime.find(l.id); rt != core.runtime.end()) {
    const LeaseRuntime& r = rt->second;
    shown.warning = r.warning;
    if (!r.warning.empty() && !r.acted.empty()) {
      shown.warning += " " + r.acted;
    } else if (!r.warning.empty() && r.warned_at) {
      TimePoint acts_at = *r.warned_at + core.policy.idle_grace;
      shown.warning +=
          now < acts_at ? " acts in " + FormatDuration(duration_cast<seconds>(acts_at - now)) : " acts now";
    }
    shown.foreign_processes = r.foreign;
  }
  return shown;
}

json QueuedJson(const LeaseCore& core, const sched::Pending& p, TimePoint now) {
  return sched::PendingShownToJson(ShowPending(core, p, now), core.Base());
}

sched::PendingShown ShowPending(const LeaseCore& core, const sched::Pending& p, TimePoint now) {
  sched::PendingShown shown;
  shown.pending = p;
  shown.waiting_seconds = duration_cast<seconds>(now - p.submitted_at).count();
  const sched::Waiting* w = WaitingOf(core, p.id);
  shown.position = w != nullptr ? w->position : 0;
  shown.queue_length = static_cast<int64_t>(core.book.queue().size());
  shown.reason = WaitReason(core, p.id);
  return shown;
}

const sched::Waiting* WaitingOf(const LeaseCore& core, int64_t id) {
  auto it = core.waiting.find(id);
  return it == core.waiting.end() ? nullptr : &it->second;
}

std::string BackfillRefusal(const LeaseCore& core, const std::vector<sched::GpuSlot>& marked,
                            int64_t memory) {
  const GateVerdict* first = nullptr;
  int first_index = -1;
  for (const sched::GpuSlot& g : marked) {
    if (!sched::IsFree(g, memory)) continue;
    auto it = core.gate.verdicts().find(g.uuid);
    if (it == core.gate.verdicts().end() || it->second.accepts) continue;
    const GateVerdict& v = it->second;
    bool is_sooner =
        first == nullptr || (v.starts_in && (!first->starts_in || *v.starts_in < *first->starts_in));
    if (is_sooner) {
      first = &v;
      first_index = g.index;
    }
  }
  if (first == nullptr) return "";
  std::string text = fmt::format("GPU {}: {}", first_index, core.gate.Describe(*first));
  if (first->starts_in) {
    text +=
        fmt::format(", opens in {}", FormatDuration(std::chrono::duration_cast<seconds>(*first->starts_in)));
  }
  return text;
}

std::string WaitReason(const LeaseCore& core, int64_t id) {
  const sched::Decision& d = core.book.last_decision();
  if (const sched::Waiting* found = WaitingOf(core, id)) {
    const sched::Waiting& w = *found;
    if (w.reason == sched::WaitReason::kPreempting) {
      return fmt::format("position {}: backfill leases on the GPUs it gets are being revoked (grace {} s)",
                         w.position, duration_cast<seconds>(core.policy.backfill.grace).count());
    }
    if (w.reason == sched::WaitReason::kBehindHead) {
      return fmt::format("position {}: behind the head of the queue, which has the next free GPUs reserved",
                         w.position);
    }
    const sched::Pending* p = core.book.FindPending(id);
    int free_now = 0;
    std::vector<sched::GpuSlot> marked = core.slots;
    core.book.MarkLeased(&marked);
    if (p != nullptr && sched::WantsMig(p->request.wants)) {
      const sched::GpuWants& want = p->request.wants;
      std::string what =
          want.mig_profile.empty() ? "MIG instance " + want.uuids[0] : want.mig_profile + " MIG instance";
      for (const sched::GpuSlot& g : marked) {
        for (const sched::MigSlot& m : g.mig) {
          bool matches = want.mig_profile.empty() ? m.uuid == want.uuids[0] : m.profile == want.mig_profile;
          free_now += matches && g.is_healthy && !m.is_leased && !m.has_foreign_processes ? 1 : 0;
        }
      }
      return fmt::format("position {}: needs a free {}, {} free now", w.position, what, free_now);
    }
    int64_t memory = p != nullptr ? p->request.wants.min_free_memory_bytes : 0;
    for (const sched::GpuSlot& g : marked) free_now += sched::IsFree(g, memory) ? 1 : 0;
    if (p != nullptr && p->request.priority == sched::Priority::kBackfill && free_now > 0) {
      if (std::string why = BackfillRefusal(core, marked, memory); !why.empty()) {
        return fmt::format("position {}: {} free, but backfill waits for a GPU [backfill] accepts; {}",
                           w.position, free_now, why);
      }
    }
    int wants = p == nullptr                     ? 0
                : p->request.wants.uuids.empty() ? p->request.wants.gpu_count
                                                 : static_cast<int>(p->request.wants.uuids.size());
    std::string when;
    if (d.reserved_from && w.position == 1) {
      when = fmt::format("; expected in {}",
                         FormatDuration(duration_cast<seconds>(*d.reserved_from - core.clock->SteadyNow())));
    } else if (!d.reserved_gpus.empty() && w.position == 1) {
      std::vector<int> kept = d.reserved_gpus;
      std::sort(kept.begin(), kept.end());
      when = fmt::format("; GPU{} {} kept for it as {} up", kept.size() == 1 ? "" : "s",
                         fmt::join(kept, ", "), kept.size() == 1 ? "it frees" : "they free");
    }
    return fmt::format(
        "position {}: needs {} GPU{}{}, {} free now{}", w.position, wants, wants == 1 ? "" : "s",
        memory > 0 ? fmt::format(" with {} free", FormatBytes(memory)) : std::string(), free_now, when);
  }
  return "waiting for the next decision";
}

std::vector<sched::PendingShown> ShowQueue(const LeaseCore& core, TimePoint now) {
  // The queue in the last decision's order.
  auto position = [&core](const sched::Pending* p) {
    const sched::Waiting* w = WaitingOf(core, p->id);
    return w != nullptr ? w->position : 1 << 30;
  };
  std::vector<const sched::Pending*> order;
  for (const sched::Pending& p : core.book.queue()) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [&](const sched::Pending* a, const sched::Pending* b) {
    return position(a) < position(b);
  });
  std::vector<sched::PendingShown> queue;
  for (const sched::Pending* p : order) queue.push_back(ShowPending(core, *p, now));
  return queue;
}

sched::LeaseListing ShowListing(const LeaseCore& core, const sched::Caller& viewer, TimePoint now) {
  sched::LeaseListing listing;
  for (const auto& [id, l] : core.book.leases()) listing.leases.push_back(ShowLease(core, l, viewer, now));
  listing.queue = ShowQueue(core, now);
  return listing;
}

json LeasesJson(const LeaseCore& core, const sched::Caller& viewer, TimePoint now) {
  json list = json::array();
  for (const auto& [id, l] : core.book.leases()) list.push_back(LeaseJson(core, l, viewer, now));
  return json{{"leases", list}};
}

json QueueJson(const LeaseCore& core, TimePoint now) {
  json list = json::array();
  for (const sched::PendingShown& p : ShowQueue(core, now))
    list.push_back(sched::PendingShownToJson(p, core.Base()));
  return json{{"queue", list}};
}

}  // namespace tarmac::leases
