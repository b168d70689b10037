// SPDX-License-Identifier: Apache-2.0
//
// A model-based check of the lease book: a sequence of operations (submit
// with counts, named GPUs, memory and priorities; decide; release; cancel;
// extend; a client dying; an agent restart through the saved JSON), each
// applied to a LeaseBook and to a small reference model, and compared
// after every step:
//  - no GPU is in two leases;
//  - a grant's GPUs are the ones named, when GPUs were named;
//  - every queued request keeps its fields (owner, command, wants, limits)
//    until it is granted or cancelled;
//  - each request is granted at most once and ends exactly once;
//  - ids never repeat;
//  - a GPU the kubelet holds for a pod (Hold) is taken exactly when no
//    lease has it, and every lease keeps the GPUs it was given;
//  - a restart changes nothing.
// The operations come from `next(bound)` (a value in [0, bound)): a seeded
// generator in tests, the fuzzer's bytes in `make fuzz`.
//
// Pure; header-only so that the unit test and the fuzz target share it.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sched/lease_book.h"
#include "sched/lease_json.h"

namespace tarmac::sched::model {

// What the model knows of a request, from when it is submitted.
struct Asked {
  Caller owner;
  LeaseRequest request;
};

// Runs up to `steps` operations over `gpu_count` GPUs. Empty when every
// check held; otherwise the first violation, with the step.
inline std::string RunLeaseModel(const std::function<uint32_t(uint32_t)>& next, int steps,
                                 int gpu_count = 6) {
  const Caller users[] = {{1001, "alice", false}, {1002, "bob", false}, {1003, "carol", false}};
  const Caller admin{0, "root", true};
  std::vector<GpuSlot> gpus;
  for (int i = 0; i < gpu_count; ++i) {
    GpuSlot g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.memory_total_bytes = int64_t{80} << 30;
    g.memory_free_bytes = g.memory_total_bytes;
    g.numa_node = i / 4;
    gpus.push_back(g);
  }
  TimeBase base{TimePoint{} + std::chrono::hours(1000), std::chrono::system_clock::from_time_t(1800000000)};
  TimePoint now = base.steady;
  LeaseBook book;
  std::map<int64_t, Asked> queued;  // The model's queue.
  std::map<int64_t, Asked> held;    // The model's leases: what was asked.
  std::set<int64_t> issued;         // Every id handed out.
  std::set<int64_t> granted_once;   // Ids granted.
  std::set<int64_t> ended;          // Ids ended (released, cancelled).
  int64_t max_id = 0;
  std::map<int64_t, std::set<std::string>> gpus_of;  // The model's GPUs of each lease.
  const Caller kubelet{0, "kubelet", false};

  auto fail = [](int step, const std::string& what) { return fmt::format("step {}: {}", step, what); };
  auto pick = [&](const auto& map) -> int64_t {
    if (map.empty()) return 0;
    auto it = map.begin();
    std::advance(it, next(static_cast<uint32_t>(map.size())));
    return it->first;
  };

  for (int step = 0; step < steps; ++step) {
    now += std::chrono::seconds(1 + next(30));
    uint32_t op = next(100);
    if (op < 35) {  // Submit.
      Caller who = users[next(3)];
      LeaseRequest r;
      if (next(3) == 0) {
        // One GPU or two neighbours, always ending (as for pods below).
        int n = std::min(1 + static_cast<int>(next(2)), gpu_count);
        int first = static_cast<int>(next(static_cast<uint32_t>(gpu_count)));
        std::set<int> named;
        for (int k = 0; k < n; ++k) named.insert((first + k) % gpu_count);
        for (int g : named) r.wants.uuids.push_back("GPU-" + std::to_string(g));
      } else {
        r.wants.gpu_count = 1 + static_cast<int>(next(3));
      }
      r.wants.min_free_memory_bytes = next(4) == 0 ? int64_t{40} << 30 : 0;
      r.priority = static_cast<Priority>(1 + next(3));  // low, normal, high
      if (next(2) == 0) r.max_time = std::chrono::seconds(60 + next(3600));
      r.command = fmt::format("job-{}", step);
      r.is_reservation = next(4) == 0;
      r.holder = {1000 + step, 5000 + step};
      r.request_key = fmt::format("key-{}", step);
      Result<int64_t> id = book.Submit(who, r, gpus, now);
      if (!id.ok()) return fail(step, "a valid request was refused: " + id.status().ToString());
      if (id.value() <= max_id || issued.count(id.value()) != 0) {
        return fail(step, fmt::format("id {} was handed out before (max so far {})", id.value(), max_id));
      }
      max_id = id.value();
      issued.insert(id.value());
      queued[id.value()] = {who, r};
    } else if (op < 60) {  // Decide; GPUs' free memory moves between decisions.
      for (GpuSlot& g : gpus) g.memory_free_bytes = next(5) == 0 ? int64_t{20} << 30 : g.memory_total_bytes;
      for (const Lease& l : book.Decide(gpus, now)) {
        auto q = queued.find(l.id);
        if (q == queued.end()) return fail(step, fmt::format("lease {} granted but not queued", l.id));
        if (!granted_once.insert(l.id).second)
          return fail(step, fmt::format("request {} granted twice", l.id));
        const Asked& a = q->second;
        if (l.uid != a.owner.uid || l.user != a.owner.user || l.command != a.request.command ||
            l.priority != a.request.priority ||
            (l.kind == node::LeaseKind::kReservation) != a.request.is_reservation ||
            l.request_key != a.request.request_key || l.holder.pid != a.request.holder.pid) {
          return fail(step, fmt::format("lease {} does not carry its request's fields", l.id));
        }
        if (!a.request.wants.uuids.empty()) {
          std::set<std::string> want(a.request.wants.uuids.begin(), a.request.wants.uuids.end());
          std::set<std::string> got(l.uuids.begin(), l.uuids.end());
          if (want != got) return fail(step, fmt::format("lease {} named its GPUs but got others", l.id));
        } else if (static_cast<int>(l.gpus.size()) != a.request.wants.gpu_count) {
          return fail(step, fmt::format("lease {} got {} GPUs for {}", l.id, l.gpus.size(),
                                        a.request.wants.gpu_count));
        }
        held[l.id] = a;
        gpus_of[l.id] = std::set<std::string>(l.uuids.begin(), l.uuids.end());
        queued.erase(q);
      }
    } else if (op < 75) {  // Release (by the owner, another user, or an admin).
      int64_t id = pick(held);
      if (id == 0) continue;
      Caller who = next(4) == 0 ? users[next(3)] : (next(2) == 0 ? held[id].owner : admin);
      Status s = book.Release(who, id, now);
      bool may = who.is_admin || who.uid == held[id].owner.uid;
      if (s.ok() != may)
        return fail(step, fmt::format("release of {} by {}: {}", id, who.user, s.ToString()));
      if (s.ok()) {
        if (!ended.insert(id).second) return fail(step, fmt::format("lease {} ended twice", id));
        held.erase(id);
        gpus_of.erase(id);
      }
    } else if (op < 80) {  // The kubelet (a pod) or Slurm (a job) holds named GPUs.
      // One GPU or two neighbours (never more than there are): a choice
      // that always ends, whatever `next` gives (a fuzzer's input runs out).
      std::set<std::string> named;
      int n = std::min(1 + static_cast<int>(next(2)), gpu_count);
      int first = static_cast<int>(next(static_cast<uint32_t>(gpu_count)));
      for (int k = 0; k < n; ++k) named.insert("GPU-" + std::to_string((first + k) % gpu_count));
      bool is_free = true;
      for (const auto& [id, taken] : gpus_of) {
        for (const std::string& u : named) is_free &= taken.count(u) == 0;
      }
      Lease pod;  // A pod's GPUs, or a Slurm job's.
      pod.uuids.assign(named.begin(), named.end());
      if (next(2) == 0) {
        pod.kind = node::LeaseKind::kPod;
        pod.user = "ml/pod-" + std::to_string(step);
      } else {
        pod.kind = node::LeaseKind::kSlurm;
        pod.slurm_job = std::to_string(1000 + step);
        pod.user = "erin";
      }
      Result<int64_t> id = book.Hold(kubelet, pod, gpus, now);
      if (id.ok() != is_free) {
        return fail(step,
                    fmt::format("hold of {} GPUs: {} but the model says {}", named.size(),
                                id.ok() ? "taken" : id.status().ToString(), is_free ? "free" : "in a lease"));
      }
      if (id.ok()) {
        if (id.value() <= max_id || !issued.insert(id.value()).second)
          return fail(step, "a hold reused an id");
        max_id = id.value();
        LeaseRequest r;
        r.wants.uuids = pod.uuids;
        r.command = "";
        held[id.value()] = {kubelet, r};
        gpus_of[id.value()] = named;
      }
    } else if (op < 85) {  // Cancel a queued request (its owner, or its client died: the agent).
      int64_t id = pick(queued);
      if (id == 0) continue;
      Caller who = next(2) == 0 ? queued[id].owner : admin;
      Status s = book.Cancel(who, id);
      if (!s.ok()) return fail(step, fmt::format("cancel of {}: {}", id, s.ToString()));
      if (!ended.insert(id).second) return fail(step, fmt::format("request {} ended twice", id));
      queued.erase(id);
    } else if (op < 92) {  // Extend.
      int64_t id = pick(held);
      if (id == 0) continue;
      Status s = book.Extend(held[id].owner, id, std::chrono::seconds(60), now);
      if (!s.ok()) return fail(step, fmt::format("extend of {}: {}", id, s.ToString()));
    } else {  // The agent restarts: everything through the saved JSON.
      std::vector<Lease> leases;
      std::vector<Pending> queue;
      for (const auto& [id, l] : book.leases()) {
        Result<Lease> back = LeaseFromJson(LeaseToJson(l, base), base);
        if (!back.ok()) return fail(step, "lease did not round-trip: " + back.status().ToString());
        leases.push_back(back.value());
      }
      for (const Pending& p : book.queue()) {
        Result<Pending> back = PendingFromJson(PendingToJson(p, base), base);
        if (!back.ok()) return fail(step, "request did not round-trip: " + back.status().ToString());
        queue.push_back(back.value());
      }
      std::string before_leases, before_queue, after_leases, after_queue;
      for (const auto& [id, l] : book.leases()) before_leases += LeaseToJson(l, base).dump();
      for (const Pending& p : book.queue()) before_queue += PendingToJson(p, base).dump();
      LeaseBook restarted;
      restarted.Restore(leases, queue, book.next_id(), book.share());
      for (const auto& [id, l] : restarted.leases()) after_leases += LeaseToJson(l, base).dump();
      for (const Pending& p : restarted.queue()) after_queue += PendingToJson(p, base).dump();
      if (before_leases != after_leases || before_queue != after_queue ||
          restarted.next_id() != book.next_id()) {
        return fail(step, "a restart changed the leases, the queue or the next id");
      }
      book = std::move(restarted);
    }

    // After every step: the book and the model agree.
    if (std::string bad = book.CheckInvariants(); !bad.empty()) return fail(step, bad);
    if (book.queue().size() != queued.size()) {
      return fail(step, fmt::format("{} queued, the model has {}", book.queue().size(), queued.size()));
    }
    for (const Pending& p : book.queue()) {
      auto q = queued.find(p.id);
      if (q == queued.end()) return fail(step, fmt::format("request {} is queued but should not be", p.id));
      const LeaseRequest& want = q->second.request;
      if (p.owner.uid != q->second.owner.uid || p.owner.user != q->second.owner.user ||
          p.request.command != want.command || p.request.wants.uuids != want.wants.uuids ||
          (want.wants.uuids.empty() && p.request.wants.gpu_count != want.wants.gpu_count) ||
          p.request.wants.min_free_memory_bytes != want.wants.min_free_memory_bytes ||
          p.request.priority != want.priority || p.request.max_time != want.max_time ||
          p.request.request_key != want.request_key || p.request.holder.pid != want.holder.pid) {
        return fail(step, fmt::format("queued request {} lost its fields: {} (asked {}, command '{}')", p.id,
                                      PendingToJson(p, base).dump(), q->second.owner.user, want.command));
      }
    }
    if (book.leases().size() != held.size()) {
      return fail(step, fmt::format("{} leases, the model has {}", book.leases().size(), held.size()));
    }
    for (const auto& [id, l] : book.leases()) {
      if (held.count(id) == 0) return fail(step, fmt::format("lease {} is held but should not be", id));
      if (std::set<std::string>(l.uuids.begin(), l.uuids.end()) != gpus_of[id]) {
        return fail(step, fmt::format("lease {} holds other GPUs than it was given", id));
      }
    }
  }
  return {};
}

}  // namespace tarmac::sched::model
