// SPDX-License-Identifier: Apache-2.0
//
// Where backfill may run (lease_ticks.h): the gate's marks on the GPUs
// (backfill_gate.h) and what it says of each (backfill.gpus), loans of
// held-idle GPUs' free memory (loans.h): what each lender's GPU shows, the
// loans granted and those recalled; and revoked leases handed over.
#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "common/units.h"
#include "leases/backfill_gates_json.h"
#include "leases/lease_api.h"
#include "leases/lease_text.h"
#include "leases/lease_ticks.h"

namespace tarmac::leases {

using TimePoint = sched::TimePoint;

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

// While a revoked lease's GPUs drain (up to kHandoverBound): how often it
// may ask for a reading that would show them empty.
constexpr std::chrono::milliseconds kReadingAskEvery{100};

namespace {

GateContext GateContextNow(const LeaseCore& core) {
  GateContext c;
  std::chrono::system_clock::time_point wall = core.clock->WallNow();
  std::time_t t = std::chrono::system_clock::to_time_t(wall);
  std::tm local{};
  localtime_r(&t, &local);
  c.minute_of_day = local.tm_hour * 60 + local.tm_min;
  c.hour_of_week = local.tm_wday * 24 + local.tm_hour;
  c.now_unix = std::chrono::duration<double>(wall.time_since_epoch()).count();
  // What a waiting request of another priority is about to get: the GPUs
  // the last decision keeps for the head of the queue from a planned time
  // (those kept with no start time in sight may run backfill until the head
  // fits), and for a MIG request, the instances of what it asks for.
  const sched::Decision& d = core.book.last_decision();
  if (d.reserved_from) c.wanted_gpus.insert(d.reserved_gpus.begin(), d.reserved_gpus.end());
  for (const sched::Pending& p : core.book.queue()) {
    const sched::GpuWants& want = p.request.wants;
    if (p.request.priority == sched::Priority::kBackfill || !sched::WantsMig(want)) continue;
    for (const sched::GpuSlot& g : core.slots) {
      for (const sched::MigSlot& m : g.mig) {
        if (want.mig_profile.empty() ? m.uuid == want.uuids[0] : m.profile == want.mig_profile) {
          c.wanted_instances.insert(m.uuid);
        }
      }
    }
  }
  return c;
}

bool Lends(const LeaseCore& core, const sched::Lease& l) {
  if (l.priority == sched::Priority::kBackfill || sched::IsLoan(l) || sched::IsMigLease(l) ||
      sched::IsExternal(l) || l.gpus.empty()) {
    return false;
  }
  switch (core.policy.backfill.lend_idle) {
    case LendIdle::kAll:
      return true;
    case LendIdle::kReservations:
      return l.lends_idle || l.kind == node::LeaseKind::kReservation;
    case LendIdle::kOff:
      break;
  }
  return l.lends_idle;
}

void RecallLoan(LeaseCore& core, const LoanRecall& r, TimePoint now) {
  const sched::Lease* found = core.book.FindLease(r.loan_id);
  if (found == nullptr) return;
  const sched::Lease l = *found;
  LeaseRuntime& rt = core.runtime[l.id];
  if (!core.book.Revoke(r.loan_id, 0, now)) {
    // Revoked already, with the grace: memory now at stake ends it at once.
    if (r.is_at_once && !rt.killed_at) core.KillRevokedNow(l, "loan revoked at once: " + r.why, now);
    return;
  }
  rt.revoked_for_claim = fmt::format("lease {}, its lender", r.lender_id);
  core.SaveLease(*core.book.FindLease(l.id));
  core.CountPreemption(l);
  core.Event(
      "preempting", l.id, l.uid, l.user, l.gpus, Actor{},
      fmt::format("loan revoked for lease {}, its lender: {}; {}", r.lender_id, r.why,
                  r.is_at_once ? std::string("ends at once")
                               : fmt::format("ends by {} ({} s of grace)",
                                             UtcText(core.Base().ToUnix(now + core.policy.backfill.grace)),
                                             duration_cast<seconds>(core.policy.backfill.grace).count())));
  // Memory is at stake: what it runs is killed now, not after the grace.
  if (r.is_at_once) core.KillRevokedNow(l, "loan revoked at once: " + r.why, now);
}

}  // namespace

void AskReadingOnceExited(LeaseCore& core, const sched::Lease& l, LeaseRuntime* rt, TimePoint now) {
  // An ask before the lease was let go does not stand for one after.
  bool is_asked = rt->reading_asked_at && now < *rt->reading_asked_at + kReadingAskEvery &&
                  !(rt->killed_at && *rt->reading_asked_at < *rt->killed_at);
  if (!core.on_wants_reading || is_asked || core.ListsALiveProcess(l)) return;
  rt->reading_asked_at = now;
  core.on_wants_reading();
}

void MarkBackfill(LeaseCore& core, const node::NodeView& reading, const std::map<int, int64_t>& by_gpu,
                  TimePoint now) {
  std::vector<Holder> holders(reading.gpus.size(), Holder::kNone);
  for (const auto& [g, id] : by_gpu) {
    const sched::Lease* l = core.book.FindLease(id);
    if (l == nullptr || g < 0 || static_cast<size_t>(g) >= holders.size()) continue;
    holders[static_cast<size_t>(g)] =
        l->priority == sched::Priority::kBackfill ? Holder::kBackfill : Holder::kOther;
  }
  // Local time and what the queue waits for: once a tick, for GPUs and instances alike.
  const GateContext context = GateContextNow(core);
  std::vector<bool> accepts = core.gate.Observe(reading, holders, now, context);
  for (size_t i = 0; i < core.slots.size() && i < accepts.size(); ++i)
    core.slots[i].accepts_backfill = accepts[i];
  // MIG instances are devices of their own: held by their lease, if any.
  std::map<std::string, Holder> instance_holders;
  for (const auto& [id, l] : core.book.leases()) {
    if (sched::IsMigLease(l)) {
      instance_holders[l.uuids[0]] =
          l.priority == sched::Priority::kBackfill ? Holder::kBackfill : Holder::kOther;
    }
  }
  std::map<std::string, bool> instances = core.gate.ObserveInstances(reading, instance_holders, now, context);
  for (sched::GpuSlot& s : core.slots) {
    for (sched::MigSlot& m : s.mig) {
      auto it = instances.find(m.uuid);
      m.accepts_backfill = it != instances.end() && it->second;
    }
  }
}

// The backfill lease running on a GPU (by index) or MIG instance (by UUID)
// now, if one does: "running backfill lease 22 of batch".
std::optional<std::string> RunningBackfill(const LeaseCore& core, int index, const std::string& uuid,
                                           bool is_instance) {
  for (const auto& [id, l] : core.book.leases()) {
    if (l.priority != sched::Priority::kBackfill || sched::IsMigLease(l) != is_instance) continue;
    bool holds = is_instance ? !l.uuids.empty() && l.uuids[0] == uuid
                             : std::find(l.gpus.begin(), l.gpus.end(), index) != l.gpus.end();
    if (holds) return fmt::format("running backfill lease {} of {}", id, l.user);
  }
  return std::nullopt;
}

// Each GPU (and MIG instance) as backfill's gate saw it at the last tick;
// one a backfill lease runs on says so (the gate would start one there).
Result<json> OnBackfillGpus(LeaseCore& core, const ApiCall& c) {
  GateReport report;
  auto add = [&](int index, const std::string& uuid, const std::string& mig_profile) {
    auto it = core.gate.verdicts().find(uuid);
    if (it == core.gate.verdicts().end()) return;
    const GateVerdict& v = it->second;
    std::optional<std::string> running = RunningBackfill(core, index, uuid, !mig_profile.empty());
    GateReport::Device d{index,
                         uuid,
                         mig_profile,
                         v.accepts,
                         running.value_or(core.gate.Describe(v)),
                         std::nullopt,
                         std::nullopt,
                         std::nullopt,
                         0,
                         std::nullopt,
                         ""};
    if (core.policy.backfill.is_auto) d.arrivals_per_hour = v.arrivals_per_hour;
    if (v.starts_in && !running) {
      d.starts_in_seconds = std::chrono::duration<double>(*v.starts_in).count();
      d.starts_at_unix = static_cast<int64_t>(
          core.Base().ToUnix(c.now + std::chrono::duration_cast<TimePoint::duration>(*v.starts_in)));
    }
    report.gpus.push_back(std::move(d));
  };
  // Each device: a GPU, then its MIG instances.
  for (const sched::GpuSlot& slot : core.slots) {
    add(slot.index, slot.uuid, "");
    for (const auto& [id, l] : core.book.leases()) {  // Whose GPU lends, and after how long.
      if (report.gpus.empty() || report.gpus.back().gpu != slot.index || !Lends(core, l) ||
          std::find(l.gpus.begin(), l.gpus.end(), slot.index) == l.gpus.end())
        continue;
      LendDelay delay = core.loans.DelayOf({id, slot.index});
      GateReport::Device& d = report.gpus.back();
      d.lender = id;
      d.lend_delay_seconds = std::chrono::duration<double>(delay.delay).count();
      d.lend_delay_why = delay.why;
    }
    for (const sched::MigSlot& m : slot.mig) add(slot.index, m.uuid, m.profile);
  }
  using Seconds = std::chrono::duration<double>;
  const BackfillPolicy& b = core.policy.backfill;
  report.is_auto = b.is_auto;
  report.idle_for_seconds = Seconds(b.idle_for).count();
  report.settle_seconds = Seconds(b.settle).count();
  report.min_run_seconds = Seconds(b.min_run).count();
  return GateReportToJson(report);
}

// What the lender's GPU shows this tick: its processes apart from the
// loan's (whose PIDs the desk notes for the GPU).
LenderSight SightOf(LeaseCore& core, const sched::Lease& lender, const node::GpuView& g) {
  LenderSight s;
  s.lender_id = lender.id;
  s.gpu = g.info.index;
  s.memory_total_bytes = g.sample.memory_total_bytes.value_or(0);
  std::set<int64_t> loan_pids;
  if (const sched::Lease* loan = core.book.LoanOf(lender.id, s.gpu)) {
    s.loan_id = loan->id;
    s.lent_bytes = loan->lent_memory_bytes;
    for (const ProcessIdentity& p : core.LoanProcesses(*loan)) loan_pids.insert(p.pid);
  }
  double sm = 0;
  bool is_sm_known = g.sample.health == node::GpuHealth::kOk;
  for (const node::ProcessView& p : g.processes) {
    int64_t memory = p.process.used_memory_bytes.value_or(0);
    if (loan_pids.count(p.details.pid) != 0) {
      s.loan_memory_bytes += memory;
      continue;
    }
    ++s.lender_processes;
    s.lender_memory_bytes += memory;
    if (p.process.sm_utilization_ratio) {
      sm += *p.process.sm_utilization_ratio;
    } else {
      is_sm_known = false;
    }
  }
  // A reservation's GPU the holder runs nothing on computes nothing: SM 0,
  // lent whole (less the margin), recalled the moment anything starts
  // there. A job's GPU with nothing on it yet is never lent: its command
  // may be about to start there, and allocate more than the margin at once.
  if (s.loan_id == 0 && s.lender_processes == 0 && lender.kind != node::LeaseKind::kReservation) {
    is_sm_known = false;
  }
  if (is_sm_known) s.lender_sm_ratio = sm;
  core.loans.NoteLoanProcesses(s.gpu, std::move(loan_pids));
  return s;
}

void WatchLoans(LeaseCore& core, const node::NodeView& reading, TimePoint now) {
  core.loans.StartTick();
  std::vector<LenderSight> sights;
  for (const auto& [id, l] : core.book.leases()) {
    if (!Lends(core, l)) continue;
    for (int index : l.gpus) {  // Each GPU lent on its own.
      if (index < 0 || static_cast<size_t>(index) >= reading.gpus.size()) continue;
      sights.push_back(SightOf(core, l, reading.gpus[static_cast<size_t>(index)]));
    }
  }
  LoanAdvice advice = core.loans.Observe(sights, now);
  for (const LoanRecall& r : advice.recalls) RecallLoan(core, r, now);
}

void GrantLoans(LeaseCore& core, TimePoint now) {
  for (const LoanOffer& offer : core.loans.offers()) {
    const sched::Lease* lender = core.book.FindLease(offer.lender_id);
    if (lender == nullptr || lender->revoking_since ||
        core.book.LoanOf(offer.lender_id, offer.gpu) != nullptr)
      continue;
    // The first queued backfill request for one GPU that fits.
    int64_t request_id = 0;
    for (const sched::Pending& p : core.book.queue()) {
      const sched::GpuWants& w = p.request.wants;
      if (p.request.priority == sched::Priority::kBackfill && w.uuids.empty() && w.mig_profile.empty() &&
          w.gpu_count == 1 && w.min_free_memory_bytes <= offer.lendable_bytes) {
        request_id = p.id;
        break;
      }
    }
    if (request_id == 0) return;
    Result<sched::Lease> loan =
        core.book.Lend(request_id, offer.lender_id, offer.gpu, offer.lendable_bytes, now);
    if (!loan.ok()) continue;
    // What is on the GPU now is the lender's: never the loan's victims.
    std::set<std::pair<int64_t, int64_t>> present;
    if (auto listed = core.processes_by_gpu.find(offer.gpu); listed != core.processes_by_gpu.end()) {
      for (const ProcessIdentity& p : listed->second) present.emplace(p.pid, p.start_ticks);
    }
    core.loans.NoteLoan({offer.lender_id, offer.gpu}, std::move(present));
    const sched::Lease& from = *core.book.FindLease(offer.lender_id);
    std::string lent =
        offer.lender_processes == 0
            ? fmt::format(
                  "{} of GPU {} lent by lease {} of {} (it runs nothing there; all but the margin {})",
                  FormatBytes(offer.lendable_bytes), offer.gpu, from.id, from.user,
                  FormatBytes(core.policy.backfill.lend_margin_bytes))
            : fmt::format("{} of GPU {} lent by lease {} of {} (idle at 0 % SM; its peak {} + margin {})",
                          FormatBytes(offer.lendable_bytes), offer.gpu, from.id, from.user,
                          FormatBytes(offer.lender_peak_bytes),
                          FormatBytes(core.policy.backfill.lend_margin_bytes));
    core.RecordGrant(std::move(loan).value(), ", " + lent);
    const sched::Lease& l = *core.book.FindLease(request_id);
    core.Event("lent", from.id, from.uid, from.user, from.gpus, Actor{},
               fmt::format("GPU {}: {} lent to backfill lease {} of {}", offer.gpu,
                           FormatBytes(offer.lendable_bytes), l.id, l.user));
  }
}

bool CheckRevoked(LeaseCore& core, TimePoint now) {
  std::vector<std::pair<int64_t, int64_t>> due;  // (lease, for request)
  for (const auto& [id, l] : core.book.leases()) {
    if (!l.revoking_since) continue;
    auto rt = core.runtime.find(id);
    bool is_let_go = rt != core.runtime.end() && rt->second.killed_at.has_value();
    if (is_let_go || now >= *l.revoking_since + core.policy.backfill.grace) {
      due.emplace_back(id, l.revoked_for);
    } else if (!sched::IsLoan(l)) {
      // In its grace: once what it ran has exited (or while the last reading
      // lists nothing there: what it started since may have come and gone),
      // a reading at once shows the GPU empty to its holder, which confirms
      // that before letting go, rather than the next sampling tick.
      AskReadingOnceExited(core, l, &core.runtime[id], now);
    }
  }
  bool is_changed = false;
  for (const auto& [id, for_request] : due) {
    const sched::Lease l = *core.book.FindLease(id);
    LeaseRuntime& rt = core.runtime[id];
    std::string for_whom = for_request != 0                ? fmt::format("request {}", for_request)
                           : !rt.revoked_for_claim.empty() ? rt.revoked_for_claim
                                                           : std::string("another scheduler's job");
    std::string why = rt.is_released
                          ? fmt::format("let go while revoked for {}", for_whom)
                          : fmt::format("backfill lease revoked for {}; its grace of {} s has passed",
                                        for_whom, duration_cast<seconds>(core.policy.backfill.grace).count());
    if (!rt.killed_at) {
      // Its grace was its time to let go: what is left is killed at once.
      // The lease stays, revoking for its request (which then takes no
      // other GPU), until a reading shows its GPUs empty.
      core.KillRevokedNow(l, why, now);
      is_changed = true;
    }
    if (!rt.is_swept && core.readings_seen > rt.readings_at_let_go && core.IsListedOnItsGpus(l)) {
      // Let go by its holder, yet a reading since lists a process on its
      // GPUs: what is left of it is killed now.
      core.KillRevokedNow(l, why + "; its GPUs still list a process", now);
      is_changed = true;
    }
    if (!core.IsHandedOverEmpty(l) && now < *rt.killed_at + kHandoverBound) {
      AskReadingOnceExited(core, l, &rt, now);
      continue;
    }
    if (core.IsListedOnItsGpus(l))
      why += fmt::format("; its GPUs still list a process {} s after SIGKILL", kHandoverBound.count());
    core.EndLease(id, rt.is_released ? "released" : "preempted", why, Actor{}, false, now);
    is_changed = true;
  }
  return is_changed;
}

}  // namespace tarmac::leases
