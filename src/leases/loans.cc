// SPDX-License-Identifier: Apache-2.0
#include "leases/loans.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "common/enum_names.h"
#include "common/units.h"

namespace tarmac::leases {
namespace {

constexpr std::pair<LendIdle, const char*> kLendIdleNames[] = {
    {LendIdle::kOff, "off"}, {LendIdle::kReservations, "reservations"}, {LendIdle::kAll, "all"}};

}  // namespace

const char* LendIdleName(LendIdle l) { return EnumName(kLendIdleNames, l); }
bool ParseLendIdle(std::string_view name, LendIdle* out) { return ParseEnum(kLendIdleNames, name, out); }

LoanAdvice LoanDesk::Observe(const std::vector<LenderSight>& sights, TimePoint now) {
  LoanAdvice advice;
  std::set<LenderGpu> seen;
  for (const LenderSight& s : sights) {
    const LenderGpu at{s.lender_id, s.gpu};
    seen.insert(at);
    Lender& l = lenders_[at];
    bool is_active = !s.lender_sm_ratio || *s.lender_sm_ratio > 0;
    if (is_active) {
      // A pause between two compute spells: what the lend delay learns from.
      if (l.has_computed && l.idle_since) {
        l.longest_pause = std::max(
            l.longest_pause, std::chrono::duration_cast<std::chrono::milliseconds>(now - *l.idle_since));
      }
      l.has_computed = l.has_computed || s.lender_sm_ratio.has_value();
      l.idle_since.reset();
    } else if (!l.idle_since) {
      l.idle_since = now;
    }
    l.peak_bytes = std::max(l.peak_bytes, s.lender_memory_bytes);
    l.processes = s.lender_processes;
    if (s.loan_id != 0) {
      LoanRecall r{s.loan_id, s.lender_id, true, ""};
      if (!s.lender_sm_ratio) {
        r.why = "the readings no longer tell the lender's SM from the loan's";
      } else if (l.processes_at_loan == 0 && s.lender_processes > 0) {
        r.why = fmt::format("the lender started a process on GPU {}, which it held empty when it was lent",
                            s.gpu);
      } else if (s.lender_memory_bytes > l.peak_at_loan_bytes) {
        r.why =
            fmt::format("the lender's processes hold {} on GPU {}, beyond their peak of {} when it was lent",
                        FormatBytes(s.lender_memory_bytes), s.gpu, FormatBytes(l.peak_at_loan_bytes));
      } else if (s.loan_memory_bytes > s.lent_bytes) {
        r.why = fmt::format("its processes hold {} on GPU {}, more than the {} lent",
                            FormatBytes(s.loan_memory_bytes), s.gpu, FormatBytes(s.lent_bytes));
      } else if (*s.lender_sm_ratio > 0) {
        r.is_at_once = false;
        r.why = fmt::format("the lender's processes compute again on GPU {} (SM {:.0f} %)", s.gpu,
                            100 * *s.lender_sm_ratio);
      }
      if (!r.why.empty()) advice.recalls.push_back(std::move(r));
      continue;
    }
    if (!l.idle_since || now - *l.idle_since < DelayFor(l).delay || s.memory_total_bytes <= 0) continue;
    int64_t lendable = s.memory_total_bytes - l.peak_bytes - margin_bytes_;
    if (lendable >= kMinLoanBytes) {
      advice.offers.push_back({s.lender_id, s.gpu, lendable, l.peak_bytes, s.lender_processes});
    }
  }
  for (auto it = lenders_.begin(); it != lenders_.end();) {
    it = seen.count(it->first) != 0 ? std::next(it) : lenders_.erase(it);
  }
  offers_ = advice.offers;
  return advice;
}

LendDelay LoanDesk::DelayFor(const Lender& l) const {
  using std::chrono::milliseconds;
  const milliseconds shortest = lend_after_ / 10;
  auto minutes = [](milliseconds d) { return FormatDuration(d); };
  if (!l.has_computed) {
    return {shortest, fmt::format("{}: its holder has not computed on it since watched", minutes(shortest))};
  }
  if (l.longest_pause.count() == 0) {
    return {lend_after_, fmt::format("{} (lend_after): its holder computed on it, with no pause seen yet",
                                     minutes(lend_after_))};
  }
  milliseconds learned = std::clamp(2 * l.longest_pause, shortest, lend_after_);
  return {learned,
          fmt::format("{}: twice its holder's longest pause there ({}), within {} to {}", minutes(learned),
                      minutes(l.longest_pause), minutes(shortest), minutes(lend_after_))};
}

LendDelay LoanDesk::DelayOf(const LenderGpu& at) const {
  auto it = lenders_.find(at);
  return it == lenders_.end() ? DelayFor(Lender{}) : DelayFor(it->second);
}

void LoanDesk::NoteLoan(const LenderGpu& at, std::set<std::pair<int64_t, int64_t>> present) {
  auto it = lenders_.find(at);
  if (it == lenders_.end()) return;
  it->second.peak_at_loan_bytes = it->second.peak_bytes;
  it->second.processes_at_loan = it->second.processes;
  it->second.present_at_loan = std::move(present);
}

bool LoanDesk::WasThereAtLoan(const LenderGpu& at, int64_t pid, int64_t start_ticks) const {
  auto it = lenders_.find(at);
  return it != lenders_.end() && it->second.present_at_loan.count({pid, start_ticks}) != 0;
}

int64_t LoanDesk::PeakOf(const LenderGpu& at) const {
  auto it = lenders_.find(at);
  return it == lenders_.end() ? 0 : it->second.peak_bytes;
}

}  // namespace tarmac::leases
