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
  std::set<int64_t> seen;
  for (const LenderSight& s : sights) {
    seen.insert(s.lender_id);
    Lender& l = lenders_[s.lender_id];
    bool is_active = !s.lender_sm_ratio || *s.lender_sm_ratio > 0;
    if (is_active) {
      l.idle_since.reset();
    } else if (!l.idle_since) {
      l.idle_since = now;
    }
    l.peak_bytes = std::max(l.peak_bytes, s.lender_memory_bytes);
    if (s.loan_id != 0) {
      LoanRecall r{s.loan_id, s.lender_id, true, ""};
      if (!s.lender_sm_ratio) {
        r.why = "the readings no longer tell the lender's SM from the loan's";
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
    if (!l.idle_since || now - *l.idle_since < lend_after_ || s.memory_total_bytes <= 0) continue;
    int64_t lendable = s.memory_total_bytes - l.peak_bytes - margin_bytes_;
    if (lendable >= kMinLoanBytes) advice.offers.push_back({s.lender_id, s.gpu, lendable, l.peak_bytes});
  }
  for (auto it = lenders_.begin(); it != lenders_.end();) {
    it = seen.count(it->first) != 0 ? std::next(it) : lenders_.erase(it);
  }
  offers_ = advice.offers;
  return advice;
}

void LoanDesk::NoteLoan(int64_t lender_id, std::set<std::pair<int64_t, int64_t>> present) {
  auto it = lenders_.find(lender_id);
  if (it == lenders_.end()) return;
  it->second.peak_at_loan_bytes = it->second.peak_bytes;
  it->second.present_at_loan = std::move(present);
}

bool LoanDesk::WasThereAtLoan(int64_t lender_id, int64_t pid, int64_t start_ticks) const {
  auto it = lenders_.find(lender_id);
  return it != lenders_.end() && it->second.present_at_loan.count({pid, start_ticks}) != 0;
}

int64_t LoanDesk::PeakOf(int64_t lender_id) const {
  auto it = lenders_.find(lender_id);
  return it == lenders_.end() ? 0 : it->second.peak_bytes;
}

}  // namespace tarmac::leases
