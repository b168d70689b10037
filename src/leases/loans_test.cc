// SPDX-License-Identifier: Apache-2.0
//
// The loan desk: fixed cases, then random lenders (SM coming and going,
// memory growing, loans taking what they were lent or more) checked at
// every step against a reference and the invariants that matter: a loan
// only above the lender's peak plus the margin, never to a lender that
// computes, recalled the step its lender needs the GPU back, and the
// lender never short of memory while it grows by at most the margin.
#include "leases/loans.h"

#include <gtest/gtest.h>

#include <random>

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
  EXPECT_EQ(desk.PeakOf(7), 0);
}

// The reference's view of one lender and its loan.
struct RefLender {
  int64_t memory = 0;  // The lender's processes' memory now.
  double sm = 0;
  std::optional<int64_t> idle_since_s;
  int64_t peak = 0;
  int64_t peak_at_loan = 0;
  int64_t lent = 0;       // 0: no loan.
  int64_t loan_used = 0;  // What the loan's processes hold.
  int grace_left = -1;    // Steps until a revoked loan ends; -1: not revoked.
};

TEST(LoanDeskTest, MatchesTheInvariantsOverRandomLenders) {
  constexpr int64_t kTotal = 80 * kGiB;
  constexpr int64_t kMargin = 4 * kGiB;
  constexpr int kLendAfterS = 30;
  int loans = 0;
  int at_once_recalls = 0;
  int graceful_recalls = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
    auto gib = [&](int lo, int hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng) * kGiB; };
    LoanDesk desk;
    desk.SetPolicy(seconds(kLendAfterS), kMargin);
    std::vector<RefLender> ref(3);
    for (RefLender& r : ref) r.memory = gib(1, 40);
    LoanDesk::TimePoint now{};
    int64_t clock_s = 0;
    int next_loan = 100;
    std::map<int64_t, int> loan_of;  // Loan id -> lender index.
    for (int step = 0; step < 400; ++step) {
      clock_s += std::uniform_int_distribution<int>(1, 20)(rng);
      now = LoanDesk::TimePoint{} + seconds(clock_s);
      std::vector<LenderSight> sights;
      for (size_t i = 0; i < ref.size(); ++i) {
        RefLender& r = ref[i];
        // The lender: computes now and then; its memory grows by at most
        // the margin a step, and sometimes shrinks.
        r.sm = chance(0.1) ? 0.6 : 0.0;
        if (chance(0.15)) r.memory = std::min(kTotal, r.memory + gib(0, 4));
        if (chance(0.05)) r.memory = std::max<int64_t>(kGiB, r.memory - gib(0, 10));
        // The loan: mostly within what it was lent, now and then more.
        if (r.lent > 0 && r.grace_left < 0) {
          r.loan_used = chance(0.05) ? r.lent + kGiB : std::min(r.lent, gib(1, 50));
        }
        // The holder never meets the loan's memory: what both hold fits (a
        // loan over what it was lent is killed the step it shows).
        ASSERT_LE(r.memory + std::min(r.loan_used, r.lent), kTotal)
            << "seed " << seed << " step " << step << " lender " << i;
        LenderSight s;
        s.lender_id = static_cast<int64_t>(i) + 1;
        s.gpu = static_cast<int>(i);
        s.memory_total_bytes = kTotal;
        s.lender_sm_ratio = r.sm;
        s.lender_memory_bytes = r.memory;
        for (const auto& [id, lender] : loan_of) {
          if (lender == static_cast<int>(i)) s.loan_id = id;
        }
        s.lent_bytes = r.lent;
        s.loan_memory_bytes = r.loan_used;
        sights.push_back(s);
        // The reference's own account, before the desk's advice.
        r.peak = std::max(r.peak, r.memory);
        if (r.sm > 0) {
          r.idle_since_s.reset();
        } else if (!r.idle_since_s) {
          r.idle_since_s = clock_s;
        }
      }
      std::vector<bool> had_loan(ref.size(), false);
      for (const auto& [id, lender] : loan_of) had_loan[static_cast<size_t>(lender)] = true;
      LoanAdvice advice = desk.Observe(sights, now);
      // Recalls: exactly the loans whose lender needs the GPU back.
      std::map<int64_t, const LoanRecall*> recalled;
      for (const LoanRecall& rc : advice.recalls) recalled[rc.loan_id] = &rc;
      for (const auto& [id, lender] : loan_of) {
        RefLender& r = ref[static_cast<size_t>(lender)];
        bool at_once = r.memory > r.peak_at_loan || r.loan_used > r.lent;
        bool graceful = !at_once && r.sm > 0;
        auto it = recalled.find(id);
        ASSERT_EQ(it != recalled.end(), at_once || graceful)
            << "seed " << seed << " step " << step << " loan " << id;
        if (it != recalled.end()) {
          ASSERT_EQ(it->second->is_at_once, at_once);
          ++(at_once ? at_once_recalls : graceful_recalls);
        }
      }
      // Carry the recalls out: at once frees the memory now; with the
      // grace, two more steps (its memory still held).
      for (auto it = loan_of.begin(); it != loan_of.end();) {
        RefLender& r = ref[static_cast<size_t>(it->second)];
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
      // Offers: exactly the idle lenders without a loan with room to lend.
      std::set<int64_t> offered;
      for (const LoanOffer& o : advice.offers) {
        size_t i = static_cast<size_t>(o.lender_id - 1);
        RefLender& r = ref[i];
        offered.insert(o.lender_id);
        ASSERT_EQ(o.lendable_bytes, kTotal - r.peak - kMargin) << "seed " << seed << " step " << step;
        ASSERT_GE(o.lendable_bytes, kMinLoanBytes);
        ASSERT_EQ(r.sm, 0) << "never to a lender that computes";
        ASSERT_GE(clock_s - *r.idle_since_s, kLendAfterS);
        if (chance(0.3)) continue;  // Not taken this time.
        r.lent = o.lendable_bytes;
        r.peak_at_loan = r.peak;
        r.loan_used = 0;
        desk.NoteLoan(o.lender_id);
        loan_of[next_loan++] = static_cast<int>(i);
        ++loans;
      }
      for (size_t i = 0; i < ref.size(); ++i) {
        const RefLender& r = ref[i];
        bool expected = !had_loan[i] && r.sm == 0 && r.idle_since_s &&
                        clock_s - *r.idle_since_s >= kLendAfterS &&
                        kTotal - r.peak - kMargin >= kMinLoanBytes;
        ASSERT_EQ(offered.count(static_cast<int64_t>(i) + 1) > 0, expected)
            << "seed " << seed << " step " << step << " lender " << i;
      }
    }
  }
  // The sequences reached every case.
  EXPECT_GT(loans, 100);
  EXPECT_GT(at_once_recalls, 20);
  EXPECT_GT(graceful_recalls, 20);
}

}  // namespace
}  // namespace tarmac::leases
