// SPDX-License-Identifier: Apache-2.0
//
// The loan desk: fixed cases, then random multi-GPU lenders (SM coming and
// going GPU by GPU, memory growing, empty GPUs getting a process, loans
// taking what they were lent or more) checked at every step against a
// reference and the invariants that matter: a loan only above the GPU's
// peak plus the margin, never on a GPU its lender computes on, only after
// the delay learned there, recalled the step its lender needs that GPU
// back and no other, and the lender never short of memory while it grows
// by at most the margin.
#include "leases/loans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

namespace tarmac::leases {
namespace {

using std::chrono::seconds;
constexpr int64_t kGiB = int64_t{1} << 30;

TEST(LoanDeskTest, NamesParseBothWays) {
  LendIdle l = LendIdle::kOff;
  EXPECT_TRUE(ParseLendIdle("reservations", &l));
  EXPECT_EQ(l, LendIdle::kReservations);
  EXPECT_STREQ(LendIdleName(LendIdle::kAll), "all");
  EXPECT_FALSE(ParseLendIdle("some", &l));
}

// The desk keeps a tick's offers and which processes on each GPU are a
// loan's until the next tick begins.
TEST(LoanDeskTest, ATicksOffersAndLoanProcessesLastUntilTheNextTick) {
  LoanDesk desk;
  desk.SetPolicy(seconds(0), 4 * kGiB);
  LoanDesk::TimePoint t0{};
  LenderSight s{7, 2, 80 * kGiB, 0.0, 30 * kGiB, 0, 0, 0};
  desk.StartTick();
  desk.NoteLoanProcesses(2, {4242});
  LoanAdvice a = desk.Observe({s}, t0);
  ASSERT_EQ(desk.offers().size(), a.offers.size());
  ASSERT_EQ(desk.offers().size(), 1u);
  EXPECT_EQ(desk.offers()[0].gpu, 2);
  EXPECT_TRUE(desk.IsLoanProcess(2, 4242));
  EXPECT_FALSE(desk.IsLoanProcess(2, 4243));
  EXPECT_FALSE(desk.IsLoanProcess(1, 4242));  // Another GPU's process of the same PID is not.
  desk.StartTick();
  EXPECT_TRUE(desk.offers().empty());
  EXPECT_FALSE(desk.IsLoanProcess(2, 4242));
}

TEST(LoanDeskTest, OffersAfterLendAfterAboveThePeakAndNotWithoutPerProcessSm) {
  LoanDesk desk;
  desk.SetPolicy(seconds(60), 4 * kGiB);
  LoanDesk::TimePoint t0{};
  LenderSight s{7, 0, 80 * kGiB, 0.0, 30 * kGiB, 0, 0, 0};
  EXPECT_TRUE(desk.Observe({s}, t0).offers.empty());
  s.lender_memory_bytes = 20 * kGiB;  // Less now; the peak stays 30.
  LoanAdvice a = desk.Observe({s}, t0 + seconds(60));
  ASSERT_EQ(a.offers.size(), 1u);
  EXPECT_EQ(a.offers[0].lendable_bytes, (80 - 30 - 4) * kGiB);
  EXPECT_EQ(a.offers[0].lender_peak_bytes, 30 * kGiB);
  s.lender_sm_ratio.reset();  // SM per process unknown: never lent.
  EXPECT_TRUE(desk.Observe({s}, t0 + seconds(120)).offers.empty());
  s.lender_sm_ratio = 0.0;
  EXPECT_TRUE(desk.Observe({s}, t0 + seconds(121)).offers.empty()) << "idle counts again from there";
  EXPECT_EQ(desk.Observe({s}, t0 + seconds(181)).offers.size(), 1u);
  s.lender_memory_bytes = 78 * kGiB;  // Nothing left worth lending.
  EXPECT_TRUE(desk.Observe({s}, t0 + seconds(182)).offers.empty());
  // A lender no longer sighted is forgotten.
  desk.Observe({}, t0 + seconds(183));
  EXPECT_EQ(desk.PeakOf({7, 0}), 0);
}

// The lend delay is learned GPU by GPU: a tenth of lend_after where the
// holder has not computed, lend_after after its first spell, then twice
// its longest pause there.
TEST(LoanDeskTest, TheLendDelayIsLearnedFromTheLendersPauses) {
  LoanDesk desk;
  desk.SetPolicy(seconds(600), 4 * kGiB);
  LoanDesk::TimePoint t0{};
  LenderSight s{7, 0, 80 * kGiB, 0.0, 30 * kGiB, 0, 0, 0};
  desk.Observe({s}, t0);
  EXPECT_EQ(desk.DelayOf({7, 0}).delay, seconds(60));
  EXPECT_NE(desk.DelayOf({7, 0}).why.find("has not computed"), std::string::npos) << desk.DelayOf({7, 0}).why;
  EXPECT_EQ(desk.Observe({s}, t0 + seconds(60)).offers.size(), 1u) << "lent after a minute";
  s.lender_sm_ratio = 0.9;  // It computes: lend_after until a pause is seen.
  desk.Observe({s}, t0 + seconds(70));
  EXPECT_EQ(desk.DelayOf({7, 0}).delay, seconds(600));
  s.lender_sm_ratio = 0.0;
  desk.Observe({s}, t0 + seconds(100));
  EXPECT_TRUE(desk.Observe({s}, t0 + seconds(400)).offers.empty());
  s.lender_sm_ratio = 0.5;  // A pause of 100 s, then computing again.
  desk.Observe({s}, t0 + seconds(200 + 300));
  s.lender_sm_ratio = 0.0;
  desk.Observe({s}, t0 + seconds(510));
  // Its longest pause was 400 s (100 to 500): twice that is past lend_after.
  EXPECT_EQ(desk.DelayOf({7, 0}).delay, seconds(600));
  LoanDesk quick;
  quick.SetPolicy(seconds(600), 4 * kGiB);
  s.lender_sm_ratio = 0.5;
  quick.Observe({s}, t0);
  s.lender_sm_ratio = 0.0;
  quick.Observe({s}, t0 + seconds(10));
  s.lender_sm_ratio = 0.5;
  quick.Observe({s}, t0 + seconds(100));  // A 90 s pause.
  s.lender_sm_ratio = 0.0;
  quick.Observe({s}, t0 + seconds(110));
  EXPECT_EQ(quick.DelayOf({7, 0}).delay, seconds(180));
  EXPECT_NE(quick.DelayOf({7, 0}).why.find("twice its holder's longest pause"), std::string::npos);
  EXPECT_TRUE(quick.Observe({s}, t0 + seconds(289)).offers.empty());
  EXPECT_EQ(quick.Observe({s}, t0 + seconds(290)).offers.size(), 1u);
  // Another GPU of the same lease learns on its own.
  EXPECT_EQ(quick.DelayOf({7, 1}).delay, seconds(60));
}

// A GPU the lender runs nothing on is lent whole, less the margin, and the
// loan ends at once when the lender starts anything there.
TEST(LoanDeskTest, AnEmptyGpuIsLentWholeAndRecalledAtOnceWhenItsHolderStartsThere) {
  LoanDesk desk;
  desk.SetPolicy(seconds(600), 4 * kGiB);
  LoanDesk::TimePoint t0{};
  LenderSight empty{7, 3, 80 * kGiB, 0.0, 0, 0, 0, 0, 0};
  desk.Observe({empty}, t0);
  LoanAdvice a = desk.Observe({empty}, t0 + seconds(60));
  ASSERT_EQ(a.offers.size(), 1u);
  EXPECT_EQ(a.offers[0].lendable_bytes, 76 * kGiB);
  EXPECT_EQ(a.offers[0].lender_processes, 0);
  desk.NoteLoan({7, 3});
  empty.loan_id = 50;
  empty.lent_bytes = 76 * kGiB;
  EXPECT_TRUE(desk.Observe({empty}, t0 + seconds(61)).recalls.empty());
  LenderSight started = empty;
  started.lender_processes = 1;  // Listed before its memory is.
  a = desk.Observe({started}, t0 + seconds(62));
  ASSERT_EQ(a.recalls.size(), 1u);
  EXPECT_TRUE(a.recalls[0].is_at_once);
  EXPECT_NE(a.recalls[0].why.find("started a process on GPU 3"), std::string::npos) << a.recalls[0].why;
}

// The reference's view of one lender's GPU and its loan.
struct RefLender {
  int64_t lender = 0;
  int gpu = 0;
  int64_t memory = 0;  // The lender's processes' memory there now.
  int processes = 1;   // 0: the lender runs nothing there.
  double sm = 0;
  std::optional<int64_t> idle_since_s;
  bool has_computed = false;
  int64_t longest_pause_s = 0;
  int64_t peak = 0;
  int64_t peak_at_loan = 0;
  int processes_at_loan = 0;
  int64_t lent = 0;       // 0: no loan.
  int64_t loan_used = 0;  // What the loan's processes hold.
  int grace_left = -1;    // Steps until a revoked loan ends; -1: not revoked.

  int64_t DelayS(int64_t lend_after_s) const {
    const int64_t shortest = lend_after_s / 10;
    if (!has_computed) return shortest;
    if (longest_pause_s == 0) return lend_after_s;
    return std::clamp(2 * longest_pause_s, shortest, lend_after_s);
  }
};

// Random multi-GPU lenders: two leases of three GPUs and one of one, some
// GPUs empty, computing and growing on some GPUs and not others. Every
// step, the desk's recalls and offers are exactly the reference's, GPU by
// GPU, and the lender never meets the loan's memory.
TEST(LoanDeskTest, MatchesTheInvariantsOverRandomMultiGpuLenders) {
  constexpr int64_t kTotal = 80 * kGiB;
  constexpr int64_t kMargin = 4 * kGiB;
  constexpr int64_t kLendAfterS = 100;
  int loans = 0;
  int at_once_recalls = 0;
  int graceful_recalls = 0;
  int empty_loans = 0;
  int kept_beside_a_recall = 0;  // Loans that stood while the same lender's other GPU was recalled.
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
    auto gib = [&](int lo, int hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng) * kGiB; };
    LoanDesk desk;
    desk.SetPolicy(seconds(kLendAfterS), kMargin);
    std::vector<RefLender> ref;
    for (auto [lender, first, count] : {std::tuple{1, 0, 3}, std::tuple{2, 3, 3}, std::tuple{3, 6, 1}}) {
      for (int g = first; g < first + count; ++g) {
        RefLender r;
        r.lender = lender;
        r.gpu = g;
        r.processes = chance(0.3) ? 0 : 1;
        r.memory = r.processes == 0 ? 0 : gib(1, 40);
        ref.push_back(r);
      }
    }
    int64_t clock_s = 0;
    int next_loan = 100;
    std::map<int64_t, size_t> loan_of;  // Loan id -> index in ref.
    for (int step = 0; step < 400; ++step) {
      clock_s += std::uniform_int_distribution<int>(1, 20)(rng);
      LoanDesk::TimePoint now = LoanDesk::TimePoint{} + seconds(clock_s);
      std::vector<LenderSight> sights;
      for (size_t i = 0; i < ref.size(); ++i) {
        RefLender& r = ref[i];
        // The lender, GPU by GPU: an empty GPU now and then gets a process;
        // where it runs, it computes now and then, grows by at most the
        // margin a step, and sometimes shrinks.
        if (r.processes == 0 && chance(0.03)) {
          r.processes = 1;
          r.memory = chance(0.3) ? 0 : gib(1, 4);  // Listed before it allocates, sometimes.
        } else if (r.processes > 0 && chance(0.15)) {
          r.memory = std::min(kTotal, r.memory + gib(0, 4));
        } else if (r.processes > 0 && chance(0.05)) {
          r.memory = std::max<int64_t>(kGiB, r.memory - gib(0, 10));
        }
        r.sm = r.processes > 0 && chance(0.1) ? 0.6 : 0.0;
        if (r.lent > 0 && r.grace_left < 0) {
          r.loan_used = chance(0.05) ? r.lent + kGiB : std::min(r.lent, gib(1, 50));
        }
        ASSERT_LE(r.memory + std::min(r.loan_used, r.lent), kTotal)
            << "seed " << seed << " step " << step << " GPU " << r.gpu;
        LenderSight s;
        s.lender_id = r.lender;
        s.gpu = r.gpu;
        s.memory_total_bytes = kTotal;
        s.lender_sm_ratio = r.sm;
        s.lender_memory_bytes = r.memory;
        s.lender_processes = r.processes;
        for (const auto& [id, at] : loan_of) {
          if (at == i) s.loan_id = id;
        }
        s.lent_bytes = r.lent;
        s.loan_memory_bytes = r.loan_used;
        sights.push_back(s);
        r.peak = std::max(r.peak, r.memory);
        if (r.sm > 0) {
          if (r.has_computed && r.idle_since_s)
            r.longest_pause_s = std::max(r.longest_pause_s, clock_s - *r.idle_since_s);
          r.has_computed = true;
          r.idle_since_s.reset();
        } else if (!r.idle_since_s) {
          r.idle_since_s = clock_s;
        }
      }
      std::shuffle(sights.begin(), sights.end(), rng);  // The order the service lists them in is no matter.
      std::vector<bool> had_loan(ref.size(), false);
      for (const auto& [id, at] : loan_of) had_loan[at] = true;
      LoanAdvice advice = desk.Observe(sights, now);
      std::map<int64_t, const LoanRecall*> recalled;
      for (const LoanRecall& rc : advice.recalls) recalled[rc.loan_id] = &rc;
      std::set<int64_t> lenders_recalled;
      for (const auto& [id, at] : loan_of) {
        RefLender& r = ref[at];
        bool at_once = r.memory > r.peak_at_loan || (r.processes_at_loan == 0 && r.processes > 0) ||
                       r.loan_used > r.lent;
        bool graceful = !at_once && r.sm > 0;
        auto it = recalled.find(id);
        ASSERT_EQ(it != recalled.end(), at_once || graceful)
            << "seed " << seed << " step " << step << " loan " << id << " on GPU " << r.gpu;
        if (it != recalled.end()) {
          ASSERT_EQ(it->second->is_at_once, at_once);
          ASSERT_EQ(it->second->lender_id, r.lender);
          ++(at_once ? at_once_recalls : graceful_recalls);
          lenders_recalled.insert(r.lender);
        }
      }
      for (const auto& [id, at] : loan_of) {
        if (lenders_recalled.count(ref[at].lender) != 0 && recalled.count(id) == 0) ++kept_beside_a_recall;
      }
      for (auto it = loan_of.begin(); it != loan_of.end();) {
        RefLender& r = ref[it->second];
        auto rc = recalled.find(it->first);
        if (rc != recalled.end() && rc->second->is_at_once) r.grace_left = 0;
        if (rc != recalled.end() && r.grace_left < 0) r.grace_left = 2;
        if (r.grace_left == 0) {
          r.lent = r.loan_used = 0;
          r.grace_left = -1;
          it = loan_of.erase(it);
          continue;
        }
        if (r.grace_left > 0) --r.grace_left;
        ++it;
      }
      std::set<std::pair<int64_t, int>> offered;
      for (const LoanOffer& o : advice.offers) {
        auto found = std::find_if(ref.begin(), ref.end(), [&](const RefLender& r) {
          return r.lender == o.lender_id && r.gpu == o.gpu;
        });
        ASSERT_NE(found, ref.end());
        RefLender& r = *found;
        ASSERT_TRUE(offered.insert({o.lender_id, o.gpu}).second) << "one offer a GPU";
        ASSERT_EQ(o.lendable_bytes, kTotal - r.peak - kMargin) << "seed " << seed << " step " << step;
        ASSERT_GE(o.lendable_bytes, kMinLoanBytes);
        ASSERT_EQ(r.sm, 0) << "never on a GPU its lender computes on";
        ASSERT_GE(clock_s - *r.idle_since_s, r.DelayS(kLendAfterS));
        if (chance(0.3)) continue;  // Not taken this time.
        r.lent = o.lendable_bytes;
        r.peak_at_loan = r.peak;
        r.processes_at_loan = r.processes;
        r.loan_used = 0;
        empty_loans += r.processes == 0 ? 1 : 0;
        desk.NoteLoan({o.lender_id, o.gpu});
        loan_of[next_loan++] = static_cast<size_t>(found - ref.begin());
        ++loans;
      }
      for (size_t i = 0; i < ref.size(); ++i) {
        const RefLender& r = ref[i];
        bool expected = !had_loan[i] && r.sm == 0 && r.idle_since_s &&
                        clock_s - *r.idle_since_s >= r.DelayS(kLendAfterS) &&
                        kTotal - r.peak - kMargin >= kMinLoanBytes;
        ASSERT_EQ(offered.count({r.lender, r.gpu}) > 0, expected)
            << "seed " << seed << " step " << step << " GPU " << r.gpu;
      }
    }
  }
  // The sequences reached every case.
  EXPECT_GT(loans, 100);
  EXPECT_GT(empty_loans, 10);
  EXPECT_GT(at_once_recalls, 20);
  EXPECT_GT(graceful_recalls, 20);
  EXPECT_GT(kept_beside_a_recall, 20);
}

}  // namespace
}  // namespace tarmac::leases
