// SPDX-License-Identifier: Apache-2.0
//
// Where backfill may run (lease_service.h): the gate's marks on the GPUs
// (backfill_gate.h) and what it says of each (backfill.gpus), and loans of
// held-idle GPUs' free memory (loans.h): what each lender's GPU shows, the
// loans granted and those recalled.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <ctime>

#include "common/units.h"
#include "leases/lease_service.h"
#include "leases/lease_text.h"

namespace tarmac::leases {

using nlohmann::json;
using std::chrono::duration_cast;
using std::chrono::seconds;

// --- the gate ----------------------------------------------------------------------

GateContext LeaseService::GateContextNow() const {
  GateContext c;
  std::chrono::system_clock::time_point wall = clock_->WallNow();
  std::time_t t = std::chrono::system_clock::to_time_t(wall);
  std::tm local{};
  localtime_r(&t, &local);
  c.minute_of_day = local.tm_hour * 60 + local.tm_min;
  c.hour_of_week = local.tm_wday * 24 + local.tm_hour;
  c.now_unix = std::chrono::duration<double>(wall.time_since_epoch()).count();
  // What a waiting request of another priority is about to get: the GPUs
  // the last decision keeps for the head of the queue, and for a MIG
  // request, the instances of what it asks for.
  const sched::Decision& d = book_.last_decision();
  c.wanted_gpus.insert(d.reserved_gpus.begin(), d.reserved_gpus.end());
  for (const sched::Pending& p : book_.queue()) {
    const sched::GpuWants& want = p.request.wants;
    if (p.request.priority == sched::Priority::kBackfill || !sched::WantsMig(want)) continue;
    for (const sched::GpuSlot& g : slots_) {
      for (const sched::MigSlot& m : g.mig) {
        if (want.mig_profile.empty() ? m.uuid == want.uuids[0] : m.profile == want.mig_profile) {
          c.wanted_instances.insert(m.uuid);
        }
      }
    }
  }
  return c;
}

void LeaseService::MarkBackfill(const node::NodeView& fleet, const std::map<int, int64_t>& by_gpu,
                                TimePoint now) {
  std::vector<Holder> holders(fleet.gpus.size(), Holder::kNone);
  for (const auto& [g, id] : by_gpu) {
    const sched::Lease* l = book_.FindLease(id);
    if (l == nullptr || g < 0 || static_cast<size_t>(g) >= holders.size()) continue;
    holders[static_cast<size_t>(g)] =
        l->priority == sched::Priority::kBackfill ? Holder::kBackfill : Holder::kOther;
  }
  // Local time and what the queue waits for: once a tick, for GPUs and instances alike.
  const GateContext context = GateContextNow();
  std::vector<bool> accepts = backfill_.Observe(fleet, holders, now, context);
  for (size_t i = 0; i < slots_.size() && i < accepts.size(); ++i) slots_[i].accepts_backfill = accepts[i];
  // MIG instances are devices of their own: held by their lease, if any.
  std::map<std::string, Holder> instance_holders;
  for (const auto& [id, l] : book_.leases()) {
    if (sched::IsMigLease(l)) {
      instance_holders[l.uuids[0]] =
          l.priority == sched::Priority::kBackfill ? Holder::kBackfill : Holder::kOther;
    }
  }
  std::map<std::string, bool> instances = backfill_.ObserveInstances(fleet, instance_holders, now, context);
  for (sched::GpuSlot& s : slots_) {
    for (sched::MigSlot& m : s.mig) {
      auto it = instances.find(m.uuid);
      m.accepts_backfill = it != instances.end() && it->second;
    }
  }
}

// Each GPU (and MIG instance) as backfill's gate saw it at the last tick.
Result<json> LeaseService::OnBackfillGpus(const Call& c) {
  // Each device: its GPU's index, its UUID, and its MIG profile (none for a GPU).
  std::vector<std::tuple<int, std::string, json>> devices;
  for (const sched::GpuSlot& slot : slots_) {
    devices.emplace_back(slot.index, slot.uuid, nullptr);
    for (const sched::MigSlot& m : slot.mig) devices.emplace_back(slot.index, m.uuid, m.profile);
  }
  json gpus = json::array();
  for (const auto& [index, uuid, mig] : devices) {
    auto it = backfill_.verdicts().find(uuid);
    if (it == backfill_.verdicts().end()) continue;
    const GateVerdict& v = it->second;
    json g = {{"gpu", index}, {"uuid", uuid}, {"accepts", v.accepts}, {"why", backfill_.Describe(v)}};
    if (policy_.backfill.is_auto) g["arrivals_per_hour"] = v.arrivals_per_hour;
    if (!mig.is_null()) g["mig_profile"] = mig;
    if (v.starts_in) {
      g["starts_in_seconds"] = std::chrono::duration<double>(*v.starts_in).count();
      g["starts_at_unix"] = static_cast<int64_t>(
          Base().ToUnix(c.now + std::chrono::duration_cast<TimePoint::duration>(*v.starts_in)));
    }
    gpus.push_back(std::move(g));
  }
  using Seconds = std::chrono::duration<double>;
  const BackfillPolicy& b = policy_.backfill;
  if (b.is_auto) {
    return json{{"gpus", gpus},
                {"idle_for", "auto"},
                {"settle_seconds", Seconds(b.settle).count()},
                {"min_run_seconds", Seconds(b.min_run).count()}};
  }
  return json{{"gpus", gpus}, {"idle_for", "fixed"}, {"idle_for_seconds", Seconds(b.idle_for).count()}};
}

// --- loans -------------------------------------------------------------------------

bool LeaseService::Lends(const sched::Lease& l) const {
  if (l.priority == sched::Priority::kBackfill || sched::IsLoan(l) || sched::IsMigLease(l) ||
      sched::IsExternal(l) || l.gpus.size() != 1) {
    return false;
  }
  switch (policy_.backfill.lend_idle) {
    case LendIdle::kAll:
      return true;
    case LendIdle::kReservations:
      return l.lends_idle || l.kind == node::LeaseKind::kReservation;
    case LendIdle::kOff:
      break;
  }
  return l.lends_idle;
}

std::vector<ProcessIdentity> LeaseService::LoanProcesses(const sched::Lease& loan) {
  std::vector<ProcessIdentity> out =
      processes_->LeaseProcesses(loan.token, loan.uid, loan.holder.start_ticks);
  std::set<int64_t> counted;
  for (const ProcessIdentity& p : out) counted.insert(p.pid);
  if (const sched::Lease* lender = book_.FindLease(loan.lent_from)) {
    for (const ProcessIdentity& p :
         processes_->LeaseProcesses(lender->token, lender->uid, lender->holder.start_ticks)) {
      counted.insert(p.pid);  // The lender's: never the loan's.
    }
  }
  auto listed = loan.gpus.empty() ? processes_by_gpu_.end() : processes_by_gpu_.find(loan.gpus[0]);
  if (listed == processes_by_gpu_.end()) return out;
  for (const ProcessIdentity& p : listed->second) {
    if (counted.count(p.pid) != 0 || loans_.WasThereAtLoan(loan.lent_from, p.pid, p.start_ticks)) continue;
    if (p.uid != loan.uid || p.start_ticks < loan.holder.start_ticks) continue;
    out.push_back(p);
  }
  return out;
}

bool LeaseService::IsLoanProcess(int gpu, int64_t pid) const { return loans_.IsLoanProcess(gpu, pid); }

void LeaseService::WatchLoans(const node::NodeView& fleet, TimePoint now) {
  loans_.StartTick();
  std::vector<LenderSight> sights;
  for (const auto& [id, l] : book_.leases()) {
    if (!Lends(l) || l.gpus[0] < 0 || static_cast<size_t>(l.gpus[0]) >= fleet.gpus.size()) continue;
    const node::GpuView& g = fleet.gpus[static_cast<size_t>(l.gpus[0])];
    LenderSight s;
    s.lender_id = id;
    s.gpu = g.info.index;
    s.memory_total_bytes = g.sample.memory_total_bytes.value_or(0);
    std::set<int64_t> loan_pids;
    if (const sched::Lease* loan = book_.LoanOf(id)) {
      s.loan_id = loan->id;
      s.lent_bytes = loan->lent_memory_bytes;
      for (const ProcessIdentity& p : LoanProcesses(*loan)) loan_pids.insert(p.pid);
    }
    double sm = 0;
    bool is_sm_known = g.sample.health == node::GpuHealth::kOk;
    int lender_processes = 0;
    for (const node::ProcessView& p : g.processes) {
      int64_t memory = p.process.used_memory_bytes.value_or(0);
      if (loan_pids.count(p.details.pid) != 0) {
        s.loan_memory_bytes += memory;
        continue;
      }
      ++lender_processes;
      s.lender_memory_bytes += memory;
      if (p.process.sm_utilization_ratio) {
        sm += *p.process.sm_utilization_ratio;
      } else {
        is_sm_known = false;
      }
    }
    // Only a GPU whose lender holds memory there is lent: a lease with
    // nothing on its GPU yet gives no peak to lend above.
    if (s.loan_id == 0 && lender_processes == 0) is_sm_known = false;
    if (is_sm_known) s.lender_sm_ratio = sm;
    loans_.NoteLoanProcesses(s.gpu, std::move(loan_pids));
    sights.push_back(s);
  }
  LoanAdvice advice = loans_.Observe(sights, now);
  for (const LoanRecall& r : advice.recalls) RecallLoan(r, now);
}

void LeaseService::GrantLoans(TimePoint now) {
  for (const LoanOffer& offer : loans_.offers()) {
    const sched::Lease* lender = book_.FindLease(offer.lender_id);
    if (lender == nullptr || lender->revoking_since || book_.LoanOf(offer.lender_id) != nullptr) continue;
    // The first queued backfill request for one GPU that fits.
    int64_t request_id = 0;
    for (const sched::Pending& p : book_.queue()) {
      const sched::GpuWants& w = p.request.wants;
      if (p.request.priority == sched::Priority::kBackfill && w.uuids.empty() && w.mig_profile.empty() &&
          w.gpu_count == 1 && w.min_free_memory_bytes <= offer.lendable_bytes) {
        request_id = p.id;
        break;
      }
    }
    if (request_id == 0) return;
    Result<sched::Lease> loan = book_.Lend(request_id, offer.lender_id, offer.lendable_bytes, now);
    if (!loan.ok()) continue;
    // What is on the GPU now is the lender's: never the loan's victims.
    std::set<std::pair<int64_t, int64_t>> present;
    if (auto listed = processes_by_gpu_.find(offer.gpu); listed != processes_by_gpu_.end()) {
      for (const ProcessIdentity& p : listed->second) present.emplace(p.pid, p.start_ticks);
    }
    loans_.NoteLoan(offer.lender_id, std::move(present));
    const sched::Lease& from = *book_.FindLease(offer.lender_id);
    std::string lent =
        fmt::format("{} of GPU {} lent by lease {} of {} (idle at 0 % SM; its peak {} + margin {})",
                    FormatBytes(offer.lendable_bytes), offer.gpu, from.id, from.user,
                    FormatBytes(offer.lender_peak_bytes), FormatBytes(policy_.backfill.lend_margin_bytes));
    RecordGrant(std::move(loan).value(), ", " + lent);
    const sched::Lease& l = *book_.FindLease(request_id);
    Event("lent", from.id, from.uid, from.user, from.gpus, Actor{},
          fmt::format("GPU {}: {} lent to backfill lease {} of {}", offer.gpu,
                      FormatBytes(offer.lendable_bytes), l.id, l.user));
  }
}

void LeaseService::RecallLoan(const LoanRecall& r, TimePoint now) {
  const sched::Lease* found = book_.FindLease(r.loan_id);
  if (found == nullptr) return;
  const sched::Lease l = *found;
  Runtime& rt = runtime_[l.id];
  if (!book_.Revoke(r.loan_id, 0, now)) {
    // Revoked already, with the grace: memory now at stake ends it at once.
    if (r.is_at_once && !rt.killed_at) KillRevokedNow(l, "loan revoked at once: " + r.why, now);
    return;
  }
  rt.revoked_for_claim = fmt::format("lease {}, its lender", r.lender_id);
  SaveLease(*book_.FindLease(l.id));
  CountPreemption(l);
  Event("preempting", l.id, l.uid, l.user, l.gpus, Actor{},
        fmt::format("loan revoked for lease {}, its lender: {}; {}", r.lender_id, r.why,
                    r.is_at_once ? std::string("ends at once")
                                 : fmt::format("ends by {} ({} s of grace)",
                                               UtcText(Base().ToUnix(now + policy_.backfill.grace)),
                                               duration_cast<seconds>(policy_.backfill.grace).count())));
  // Memory is at stake: what it runs is killed now, not after the grace.
  if (r.is_at_once) KillRevokedNow(l, "loan revoked at once: " + r.why, now);
}

void LeaseService::KillRevokedNow(const sched::Lease& l, const std::string& why, TimePoint now) {
  runtime_[l.id].killed_at = now;
  std::vector<sched::ProcessRef> victims = LeaseVictims(l);
  if (victims.empty()) return;
  TerminateProcesses(l.id, l.uid, std::move(victims), why, Actor{}, now);
  KillNow(l.id);
}

}  // namespace tarmac::leases
