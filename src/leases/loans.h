// SPDX-License-Identifier: Apache-2.0
//
// Lending a held-idle GPU's free memory to backfill. A lease that lends
// (run/reserve --lend-idle, or [backfill] lend_idle = "reservations" or
// "all") and holds one whole GPU whose processes have shown no SM activity
// for `lend_after` may have one backfill lease (a loan) run beside it, in
// memory above the most its processes have held since the agent began
// watching it (its peak) plus `lend_margin`, never more.
//
// The loan ends (is revoked) the moment the lender needs its GPU back:
// - its processes compute again (SM above 0): with the backfill grace;
// - its processes hold more memory than their peak when the loan began:
//   at once, with no grace, so the lender's allocations up to the margin
//   cannot meet backfill's memory;
// - the loan's own processes hold more memory than was lent: at once;
// - the readings no longer tell the lender's SM from the loan's (no
//   per-process SM): at once.
// Lending needs per-process SM readings (NVML process utilization); without
// them a GPU is never lent. What the desk saw of a lender is kept only while
// the lender is watched: a lender first seen now (a new lease, or after an
// agent restart) waits `lend_after` again and its peak starts from now.
//
// Pure: the lease service feeds it a sighting per lender each tick and acts
// on its advice. Thread safety: none; the lease service calls it under its
// lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac::leases {

// Who lends held-idle GPUs ([backfill] lend_idle).
enum class LendIdle { kOff, kReservations, kAll };
const char* LendIdleName(LendIdle l);
bool ParseLendIdle(std::string_view name, LendIdle* out);

// The least a loan is worth: below this much lendable memory, none.
inline constexpr int64_t kMinLoanBytes = int64_t{1} << 30;

// One lender's GPU at one tick.
struct LenderSight {
  int64_t lender_id = 0;
  int gpu = 0;
  int64_t memory_total_bytes = 0;
  // The lender's processes on the GPU (every process there but the loan's):
  // their SM (empty when a process's SM is unknown) and memory.
  std::optional<double> lender_sm_ratio;
  int64_t lender_memory_bytes = 0;
  // The loan on it, if any: its lease, what was lent and what its processes hold.
  int64_t loan_id = 0;
  int64_t lent_bytes = 0;
  int64_t loan_memory_bytes = 0;
};

struct LoanOffer {
  int64_t lender_id = 0;
  int gpu = 0;
  int64_t lendable_bytes = 0;
  int64_t lender_peak_bytes = 0;
};

struct LoanRecall {
  int64_t loan_id = 0;
  int64_t lender_id = 0;
  bool is_at_once = false;  // No grace: memory is at stake.
  std::string why;
};

struct LoanAdvice {
  std::vector<LoanOffer> offers;    // GPUs without a loan that may take one now.
  std::vector<LoanRecall> recalls;  // Loans to end.
};

class LoanDesk {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  void SetPolicy(std::chrono::milliseconds lend_after, int64_t margin_bytes) {
    lend_after_ = lend_after;
    margin_bytes_ = margin_bytes;
  }

  // Notes every lender at `now` (lenders not listed are forgotten) and
  // says which may lend and which loans must end; the offers are kept
  // until the next tick (offers()).
  LoanAdvice Observe(const std::vector<LenderSight>& sights, TimePoint now);
  const std::vector<LoanOffer>& offers() const { return offers_; }

  // This tick's processes of the loan on GPU `gpu` (the lease service
  // finds them: loan token, user, start after the loan): a lender's
  // figures leave them out. Forgotten at the next tick (StartTick).
  void NoteLoanProcesses(int gpu, std::set<int64_t> pids) { loan_pids_by_gpu_[gpu] = std::move(pids); }
  bool IsLoanProcess(int gpu, int64_t pid) const {
    auto it = loan_pids_by_gpu_.find(gpu);
    return it != loan_pids_by_gpu_.end() && it->second.count(pid) > 0;
  }
  // A tick begins: the last tick's offers and loan processes are gone.
  void StartTick() {
    offers_.clear();
    loan_pids_by_gpu_.clear();
  }

  // A loan began on `lender_id`'s GPU: its peak then is what the lender's
  // memory is measured against from now on, and the processes on the GPU
  // then (`present`: pid and start time) are the lender's, whatever they
  // carry.
  void NoteLoan(int64_t lender_id, std::set<std::pair<int64_t, int64_t>> present = {});

  // Whether the process (pid, start time) was on `lender_id`'s GPU when its
  // loan began; false once the desk forgot (an agent restart).
  bool WasThereAtLoan(int64_t lender_id, int64_t pid, int64_t start_ticks) const;

  // The lender's peak memory as the desk knows it (0 when not watched).
  int64_t PeakOf(int64_t lender_id) const;

 private:
  struct Lender {
    std::optional<TimePoint> idle_since;  // Its processes' SM at 0 since.
    int64_t peak_bytes = 0;
    int64_t peak_at_loan_bytes = 0;
    std::set<std::pair<int64_t, int64_t>> present_at_loan;  // (pid, start ticks).
  };
  std::chrono::milliseconds lend_after_{std::chrono::minutes(10)};
  int64_t margin_bytes_ = int64_t{4} << 30;
  std::map<int64_t, Lender> lenders_;
  std::vector<LoanOffer> offers_;                      // From the last Observe.
  std::map<int, std::set<int64_t>> loan_pids_by_gpu_;  // This tick's.
};

}  // namespace tarmac::leases
