// SPDX-License-Identifier: Apache-2.0
//
// Lending held-idle GPUs' free memory to backfill. A lease that lends
// (run/reserve --lend-idle, or [backfill] lend_idle = "reservations" or
// "all") and holds whole GPUs lends each of them on its own: a GPU whose
// lender's processes there have shown no SM activity for the GPU's lend
// delay may have one backfill lease (a loan) run beside them, in memory
// above the most they have held there since the agent began watching it
// (its peak) plus `lend_margin`, never more. A reservation's GPU the lender
// runs nothing on is lent whole, less the margin (the lease service never
// offers a job's empty GPU: its command may be about to start there).
//
// The lend delay is learned from the lender, GPU by GPU:
// - a GPU on which the lender has not computed since the desk began
//   watching it (a reservation left empty, or holding memory at 0 % SM
//   all along): a tenth of `lend_after` (1 min by default);
// - a GPU it computed on, with pauses between its compute spells seen:
//   twice the longest of them, at least a tenth of `lend_after` and at
//   most `lend_after` (a job that pauses for its evaluations is not lent
//   in a pause it has made before);
// - a GPU it computed on with no pause seen yet: `lend_after` (10 min).
//
// A loan ends (is revoked) the moment the lender needs that GPU back;
// activity on its other GPUs leaves the loan be:
// - its processes compute again on it (SM above 0): with the backfill grace;
// - its processes hold more memory on it than their peak when the loan
//   began, or start there when it was lent empty: at once, with no grace,
//   so the lender's allocations up to the margin cannot meet backfill's
//   memory;
// - the loan's own processes hold more memory than was lent: at once;
// - the readings no longer tell the lender's SM from the loan's (no
//   per-process SM): at once.
// Lending needs per-process SM readings (NVML process utilization); without
// them a GPU is never lent. What the desk saw of a lender's GPU is kept
// only while it is watched: one first seen now (a new lease, or after an
// agent restart) learns its delay again and its peak starts from now.
//
// Pure: the lease service feeds it a sighting per lender GPU each tick and
// acts on its advice. Thread safety: none; the lease service calls it under
// its lock.
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
  // their SM (0 when there are none; empty when a process's SM is unknown)
  // and memory.
  std::optional<double> lender_sm_ratio;
  int64_t lender_memory_bytes = 0;
  // The loan on it, if any: its lease, what was lent and what its processes hold.
  int64_t loan_id = 0;
  int64_t lent_bytes = 0;
  int64_t loan_memory_bytes = 0;
  int lender_processes = 0;  // How many (0: the lender runs nothing there).
};

// A lender's GPU: the lease and the GPU's index.
using LenderGpu = std::pair<int64_t, int>;

// How long a lender's GPU waits, idle, before it is lent, and why (the
// rule above, for `tarmac backfill status`).
struct LendDelay {
  std::chrono::milliseconds delay{0};
  std::string why;
};

struct LoanOffer {
  int64_t lender_id = 0;
  int gpu = 0;
  int64_t lendable_bytes = 0;
  int64_t lender_peak_bytes = 0;
  int lender_processes = 0;  // 0: lent whole (less the margin).
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

  // A loan began on the lender's GPU: its peak then is what the lender's
  // memory there is measured against from now on, and the processes on the
  // GPU then (`present`: pid and start time) are the lender's, whatever
  // they carry.
  void NoteLoan(const LenderGpu& at, std::set<std::pair<int64_t, int64_t>> present = {});

  // Whether the process (pid, start time) was on the lender's GPU when its
  // loan began; false once the desk forgot (an agent restart).
  bool WasThereAtLoan(const LenderGpu& at, int64_t pid, int64_t start_ticks) const;

  // The lender's peak memory on the GPU as the desk knows it (0 when not
  // watched).
  int64_t PeakOf(const LenderGpu& at) const;

  // The GPU's lend delay now (the rule above); one not watched yet is one
  // its holder has not computed on.
  LendDelay DelayOf(const LenderGpu& at) const;

 private:
  struct Lender {
    std::optional<TimePoint> idle_since;         // Its processes' SM at 0 since.
    bool has_computed = false;                   // Seen computing since watched.
    std::chrono::milliseconds longest_pause{0};  // Between two compute spells.
    int64_t peak_bytes = 0;
    int64_t peak_at_loan_bytes = 0;
    int processes = 0;  // The lender's there at the last sighting.
    int processes_at_loan = 0;
    std::set<std::pair<int64_t, int64_t>> present_at_loan;  // (pid, start ticks).
  };
  LendDelay DelayFor(const Lender& l) const;
  std::chrono::milliseconds lend_after_{std::chrono::minutes(10)};
  int64_t margin_bytes_ = int64_t{4} << 30;
  std::map<LenderGpu, Lender> lenders_;
  std::vector<LoanOffer> offers_;                      // From the last Observe.
  std::map<int, std::set<int64_t>> loan_pids_by_gpu_;  // This tick's.
};

}  // namespace tarmac::leases
