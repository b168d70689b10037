// SPDX-License-Identifier: Apache-2.0
//
// Backfill's automatic gate (idle_for = "auto") and the arrival model it
// learns from: fixed cases, then random sequences of use, waiting requests
// and arrivals checked at every step against a small reference model.
#include "leases/backfill_gate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "testutil/lease_service_fixture.h"

namespace tarmac::leases {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::LocalAt;
using test::Machine;

// Local time is UTC in these tests, so an hour of the week is plain
// arithmetic (1970-01-01 was a Thursday).
class AutoGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    if (tz != nullptr) saved_ = tz;
    had_tz_ = tz != nullptr;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", saved_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  static int UtcHourOfWeek(double unix) {
    return static_cast<int>((static_cast<int64_t>(unix) / 3600 + 4 * 24) % 168);
  }

 private:
  std::string saved_;
  bool had_tz_ = false;
};

// A Monday, 10:00 UTC.
constexpr double kMonday10 = 1796637600;  // 2026-12-07 10:00 UTC.

TEST_F(AutoGateTest, HourOfWeekStartsOnSunday) {
  EXPECT_EQ(HourOfWeek(kMonday10), 24 + 10);
  EXPECT_EQ(UtcHourOfWeek(kMonday10), 24 + 10);
  EXPECT_EQ(HourOfWeek(kMonday10 - 34 * 3600), 0) << "Sunday 00:00";
  EXPECT_EQ(HourOfWeek(kMonday10 - 34 * 3600 - 1), 167) << "Saturday 23:59:59";
}

TEST_F(AutoGateTest, ArrivalRateIsCountOverWeeksCoveredAtLeastOne) {
  ArrivalModel model(kMonday10);
  EXPECT_EQ(model.RatePerHour(0, 34, kMonday10), 0);
  model.Note(0, 34, kMonday10);
  model.Note(0, 34, kMonday10 + 60);
  model.Note(1, 35, kMonday10 + 3600);
  EXPECT_DOUBLE_EQ(model.RatePerHour(0, 34, kMonday10 + 3600), 2) << "less than a week seen counts as one";
  EXPECT_DOUBLE_EQ(model.RatePerHour(1, 34, kMonday10 + 3600), 0) << "per GPU";
  EXPECT_NEAR(model.ChanceWithin(0, 34, kMonday10 + 3600, std::chrono::minutes(30)), 1 - std::exp(-1.0),
              1e-12);
  // Four weeks on, the same two arrivals make half an arrival an hour.
  EXPECT_DOUBLE_EQ(model.RatePerHour(0, 34, kMonday10 + 4 * 7 * 86400.0), 0.5);
  // An arrival older than the model's start extends the weeks covered.
  model.Note(2, 10, kMonday10 - 7 * 86400.0);
  EXPECT_DOUBLE_EQ(model.RatePerHour(0, 34, kMonday10 + 7 * 86400.0), 1);
  model.Note(0, 200, kMonday10);  // Out of range: ignored.
  EXPECT_EQ(model.RatePerHour(0, 200, kMonday10), 0);
}

TEST(ArrivalEventsTest, OnlyGrantsOfOtherPrioritiesThanBackfillAreArrivals) {
  store::LeaseEvent e;
  e.kind = "granted";
  e.detail = "GPU 0 (GPU-0)";
  EXPECT_TRUE(IsRealArrival(e));
  e.detail = "GPU 0 (GPU-0)" + std::string(kBackfillGrantMark);
  EXPECT_FALSE(IsRealArrival(e));
  e.kind = "released";
  e.detail = "GPU 0 (GPU-0)";
  EXPECT_FALSE(IsRealArrival(e));
}

BackfillPolicy Auto(milliseconds settle, milliseconds min_run) {
  BackfillPolicy p;
  p.is_auto = true;
  p.settle = settle;
  p.min_run = min_run;
  return p;
}

TEST_F(AutoGateTest, AutoStartsAfterSettleWhenNothingWaitsAndNoArrivalIsLikely) {
  BackfillGate gate(Auto(seconds(30), std::chrono::minutes(2)), kMonday10);
  sched::TimePoint t0 = sched::TimePoint{} + std::chrono::hours(1);
  node::NodeView f = Machine(3);
  std::vector<Holder> none(3, Holder::kNone);
  GateContext c = LocalAt(10 * 60);
  c.hour_of_week = 34;
  c.now_unix = kMonday10;
  EXPECT_EQ(gate.Observe(f, none, t0, c), (std::vector<bool>{false, false, false}))
      << "a fresh agent settles too";
  const GateVerdict& v = gate.verdicts().at("GPU-0");
  EXPECT_EQ(v.reason, GateReason::kNotIdleLongEnough);
  EXPECT_EQ(gate.Describe(v), "settling: idle 0s of settle 30s");
  ASSERT_TRUE(v.starts_in.has_value());
  EXPECT_EQ(*v.starts_in, seconds(30));
  // GPU 1 waited for by a queued request; GPU 2 busy with a lease 10 s in.
  c.wanted_gpus = {1};
  gate.Observe(f, {Holder::kNone, Holder::kNone, Holder::kOther}, t0 + seconds(10), c);
  std::vector<bool> accepts = gate.Observe(f, none, t0 + seconds(30), c);
  EXPECT_EQ(accepts, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(gate.Describe(gate.verdicts().at("GPU-0")),
            "starts now: nothing queued, arrivals at this hour 0.0/h (idle 30s)");
  EXPECT_EQ(gate.verdicts().at("GPU-1").reason, GateReason::kRequestWaits);
  EXPECT_FALSE(gate.verdicts().at("GPU-1").starts_in.has_value()) << "when depends on the queue";
  EXPECT_EQ(gate.verdicts().at("GPU-2").reason, GateReason::kNotIdleLongEnough);
  // 25 real arrivals on GPU 0 at this hour: one within 2 minutes is likely.
  for (int i = 0; i < 25; ++i) gate.NoteArrival(0, kMonday10 - 7 * 86400.0 + i * 60);
  c.wanted_gpus.clear();
  accepts = gate.Observe(f, none, t0 + seconds(60), c);
  EXPECT_EQ(accepts, (std::vector<bool>{false, true, true}));
  const GateVerdict& busy = gate.verdicts().at("GPU-0");
  EXPECT_EQ(busy.reason, GateReason::kArrivalLikely);
  EXPECT_DOUBLE_EQ(busy.arrivals_per_hour, 25);
  EXPECT_EQ(gate.Describe(busy),
            "holds off: arrivals at this hour 25.0/h, one within min_run 2m 00s is likely (57 %)");
  // An hour later the rate there is zero again.
  c.hour_of_week = 35;
  c.now_unix = kMonday10 + 3600;
  EXPECT_TRUE(gate.Observe(f, none, t0 + seconds(3660), c)[0]);
}

TEST_F(AutoGateTest, AutoWindowsAndLimitsStillApply) {
  BackfillPolicy p = Auto(seconds(0), std::chrono::minutes(2));
  p.windows = {"22:00-06:00"};
  BackfillGate gate(p, kMonday10);
  node::NodeView f = Machine(1);
  sched::TimePoint t0 = sched::TimePoint{} + std::chrono::hours(1);
  GateContext c = LocalAt(12 * 60);
  EXPECT_FALSE(gate.Observe(f, {Holder::kNone}, t0, c)[0]);
  EXPECT_EQ(gate.verdicts().at("GPU-0").reason, GateReason::kOutsideWindows);
  ASSERT_TRUE(gate.verdicts().at("GPU-0").starts_in.has_value());
  EXPECT_EQ(*gate.verdicts().at("GPU-0").starts_in, std::chrono::hours(10));
  c.minute_of_day = 23 * 60;
  EXPECT_TRUE(gate.Observe(f, {Holder::kNone}, t0, c)[0]);
}

// The reference: what the gate must say for one GPU, from what happened.
struct RefGpu {
  std::optional<sched::TimePoint> last_used;  // By other work; unset: first seen.
  sched::TimePoint first_seen;
};

TEST_F(AutoGateTest, AutoMatchesAReferenceModelOverRandomSequences) {
  constexpr int kGpus = 4;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
    milliseconds settle(std::uniform_int_distribution<int>(0, 120)(rng) * 1000);
    milliseconds min_run = std::chrono::hours(1);  // One arrival at the hour: 63 %, likely.
    BackfillGate gate(Auto(settle, min_run), kMonday10);
    std::map<std::pair<int, int>, int> arrivals;  // (GPU, hour of week) -> count
    std::vector<RefGpu> ref(kGpus);
    node::NodeView f = Machine(kGpus);
    sched::TimePoint t0 = sched::TimePoint{} + std::chrono::hours(1);
    sched::TimePoint now = t0;
    double unix = kMonday10;
    for (int step = 0; step < 300; ++step) {
      seconds dt(std::uniform_int_distribution<int>(0, 600)(rng));
      now += dt;
      unix += static_cast<double>(dt.count());
      if (step == 0) {
        for (RefGpu& r : ref) r.first_seen = now;  // The gate's first look.
      }
      std::vector<Holder> holders(kGpus, Holder::kNone);
      GateContext c;
      c.now_unix = unix;
      c.hour_of_week = UtcHourOfWeek(unix);
      c.minute_of_day = static_cast<int>(static_cast<int64_t>(unix) % 86400 / 60);
      for (int g = 0; g < kGpus; ++g) {
        size_t i = static_cast<size_t>(g);
        f.gpus[i].processes.clear();
        f.gpus[i].sample.utilization_gpu_ratio = 0;
        bool is_used = false;
        if (chance(0.15)) {
          holders[i] = Holder::kOther;
          is_used = true;
        } else if (chance(0.1)) {
          f.gpus[i].sample.utilization_gpu_ratio = 0.7;  // Outside any lease.
          is_used = true;
        } else if (chance(0.2)) {
          holders[i] = Holder::kBackfill;  // Its own use never counts.
          f.gpus[i].sample.utilization_gpu_ratio = 0.9;
        }
        if (is_used) ref[i].last_used = now;
        if (chance(0.1)) c.wanted_gpus.insert(g);
        if (chance(0.03)) {
          gate.NoteArrival(g, unix);
          ++arrivals[{g, UtcHourOfWeek(unix)}];
        }
      }
      std::vector<bool> accepts = gate.Observe(f, holders, now, c);
      double weeks = std::max(1.0, (unix - kMonday10) / (7 * 86400.0));
      for (int g = 0; g < kGpus; ++g) {
        size_t i = static_cast<size_t>(g);
        sched::TimePoint since = ref[i].last_used.value_or(ref[i].first_seen);
        bool is_settled = now - since >= settle;
        double rate = arrivals[{g, c.hour_of_week}] / weeks;
        bool is_likely = 1 - std::exp(-rate) >= 0.5;
        bool expected =
            holders[i] != Holder::kOther && is_settled && c.wanted_gpus.count(g) == 0 && !is_likely;
        ASSERT_EQ(accepts[i], expected) << "seed " << seed << " step " << step << " GPU " << g << ": "
                                        << gate.Describe(gate.verdicts().at(f.gpus[i].info.uuid));
        const GateVerdict& v = gate.verdicts().at(f.gpus[i].info.uuid);
        ASSERT_DOUBLE_EQ(v.arrivals_per_hour, rate);
        if (v.reason == GateReason::kNotIdleLongEnough && v.starts_in) {
          ASSERT_EQ(*v.starts_in, settle - std::chrono::duration_cast<milliseconds>(now - since));
        }
      }
    }
  }
}

}  // namespace
}  // namespace tarmac::leases
