// SPDX-License-Identifier: Apache-2.0
#include "sched/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "testutil/gpu_slots.h"

namespace tarmac::sched {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using TimePoint = std::chrono::steady_clock::time_point;

const TimePoint kNow = TimePoint{} + hours(1000);
constexpr int64_t kHeavy = 1001;
constexpr int64_t kLight = 1002;

QueuedRequest Request(int64_t id, int64_t uid, int gpus, Priority priority = Priority::kNormal) {
  QueuedRequest r;
  r.id = id;
  r.uid = uid;
  r.wants.gpu_count = gpus;
  r.priority = priority;
  r.sequence = id;
  return r;
}

std::vector<int64_t> Granted(const Decision& d) {
  std::vector<int64_t> ids;
  for (const Grant& g : d.grants) ids.push_back(g.request_id);
  return ids;
}

TEST(ScheduleTest, GrantsInOrderUntilTheGpusRunOut) {
  Decision d = Schedule(testing::FreeGpus(4), {Request(1, 1097, 2), Request(2, 1098, 2), Request(3, 1099, 1)},
                        {}, FairShare(), kNow);
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{1, 2}));
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].request_id, 3);
  EXPECT_EQ(d.waiting[0].position, 1);
  EXPECT_EQ(d.waiting[0].reason, WaitReason::kNoFit);
  // No GPU is granted twice.
  std::set<int> seen;
  for (const Grant& g : d.grants) {
    for (int gpu : g.gpus) EXPECT_TRUE(seen.insert(gpu).second) << gpu;
  }
}

TEST(ScheduleTest, PriorityThenRecentUseThenArrivalDecideTheOrder) {
  FairShare share(hours(24));
  share.Charge(kHeavy, 100 * 3600, kNow - hours(1));
  std::vector<QueuedRequest> queue = {Request(1, kHeavy, 1), Request(2, kLight, 1),
                                      Request(3, kHeavy, 1, Priority::kHigh),
                                      Request(4, kLight, 1, Priority::kLow)};
  Decision d = Schedule(testing::FreeGpus(2), queue, {}, share, kNow);
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(d.waiting.size(), 2u);
  EXPECT_EQ(d.waiting[0].request_id, 1);
  EXPECT_EQ(d.waiting[1].request_id, 4);
}

// 8 GPUs; 6 leased, 3 of them until +1 h. The head wants 5: it is reserved
// the 2 free GPUs plus the 3 that free at +1 h. A 1-GPU job without --max-time would sit on a
// reserved GPU: it waits. One with --max-time 30m ends before: it starts.
TEST(ScheduleTest, BackfillNeverDelaysTheHead) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(8);
  for (int i = 0; i < 6; ++i) gpus[static_cast<size_t>(i)].is_leased = true;
  std::vector<RunningLease> leases = {{{0, 1, 2}, kNow + hours(1)}, {{3, 4, 5}, kNow + hours(3)}};
  QueuedRequest unbounded = Request(2, 1098, 1);
  QueuedRequest bounded = Request(3, 1099, 1);
  bounded.max_time = minutes(30);
  QueuedRequest too_long = Request(4, 1100, 1);
  too_long.max_time = hours(2);
  Decision d = Schedule(gpus, {Request(1, 1097, 5), unbounded, too_long, bounded}, leases, FairShare(), kNow);
  EXPECT_EQ(d.reserved_from, kNow + hours(1));
  EXPECT_EQ(d.reserved_gpus.size(), 5u);
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{3}));
  ASSERT_EQ(d.waiting.size(), 3u);
  EXPECT_EQ(d.waiting[0].request_id, 1);
  EXPECT_EQ(d.waiting[1].reason, WaitReason::kBehindHead);
}

TEST(ScheduleTest, GpusOutsideTheReservationAreBackfilledFreely) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(8);
  for (int i = 0; i < 4; ++i) gpus[static_cast<size_t>(i)].is_leased = true;
  // The head wants 6: at +1 h the 4 leased free up; it is reserved 6 of 8,
  // so 2 free GPUs stay outside its reservation.
  std::vector<RunningLease> leases = {{{0, 1, 2, 3}, kNow + hours(1)}};
  Decision d =
      Schedule(gpus, {Request(1, 1097, 6), Request(2, 1098, 1), Request(3, 1099, 1), Request(4, 1100, 1)},
               leases, FairShare(), kNow);
  EXPECT_EQ(d.reserved_gpus.size(), 6u);
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{2, 3}));
  for (const Grant& g : d.grants) {
    for (int gpu : g.gpus) {
      EXPECT_EQ(std::count(d.reserved_gpus.begin(), d.reserved_gpus.end(), gpu), 0) << gpu;
    }
  }
}

TEST(ScheduleTest, WithoutPlannableEndsBackfillTakesAnyFreeGpu) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(4);
  gpus[0].is_leased = true;
  gpus[1].is_leased = true;
  Decision d =
      Schedule(gpus, {Request(1, 1097, 4), Request(2, 1098, 1)}, {{{0, 1}, std::nullopt}}, FairShare(), kNow);
  EXPECT_TRUE(d.reserved_gpus.empty());
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{2}));
}

// Without a lease end to plan on, a 4-GPU head is passed over by 1-GPU
// requests until it has waited keep_for_head_after; from then on the GPUs
// it will get are kept for it (the free ones first), later real requests
// wait behind it, and backfill may still run there.
TEST(ScheduleTest, AHeadThatWaitedKeepForHeadAfterIsKeptTheGpusItWillGetAsTheyFreeUp) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(8);
  for (int i : {0, 1, 4, 5, 6}) gpus[static_cast<size_t>(i)].is_leased = true;
  std::vector<RunningLease> leases = {{{0, 1}, std::nullopt, 10}, {{4, 5, 6}, std::nullopt, 11}};
  QueuedRequest head = Request(1, 1097, 4);
  head.queued_at = kNow - minutes(59);
  std::vector<QueuedRequest> queue = {head, Request(2, 1098, 2), Request(3, 1099, 1, Priority::kBackfill)};
  const std::chrono::milliseconds keep_after = hours(1);

  Decision passed_over = Schedule(gpus, queue, leases, FairShare(), kNow, keep_after);
  EXPECT_TRUE(passed_over.reserved_gpus.empty());
  EXPECT_EQ(Granted(passed_over), (std::vector<int64_t>{2, 3}));

  queue[0].queued_at = kNow - hours(1);
  Decision kept = Schedule(gpus, queue, leases, FairShare(), kNow, keep_after);
  EXPECT_FALSE(kept.reserved_from.has_value());
  // Of the GPUs it would get were every lease gone, those free now first
  // (2, 3 and 7; no topology tells them apart), then the first leased one.
  std::vector<int> reserved = kept.reserved_gpus;
  std::sort(reserved.begin(), reserved.end());
  EXPECT_EQ(reserved, (std::vector<int>{0, 2, 3, 7}));
  // The 2-GPU request finds no free GPU outside them: it waits.
  ASSERT_EQ(kept.waiting.size(), 2u);
  EXPECT_EQ(kept.waiting[0].request_id, 1);
  EXPECT_EQ(kept.waiting[0].reason, WaitReason::kNoFit);
  EXPECT_EQ(kept.waiting[1].request_id, 2);
  EXPECT_EQ(kept.waiting[1].reason, WaitReason::kBehindHead);
  // Backfill still runs, on a kept GPU.
  EXPECT_EQ(Granted(kept), (std::vector<int64_t>{3}));

  // A GPU whose lease just let go (its process still listed, now outside
  // any lease) or busy outside leases is counted on too: without that, an
  // 8-GPU head is passed over after every job's end.
  std::vector<GpuSlot> after_end = testing::FreeGpus(8);
  after_end[0].is_leased = true;
  after_end[1].has_foreign_processes = true;
  after_end[2].is_busy = true;
  QueuedRequest whole = Request(5, 1097, 8);
  whole.queued_at = kNow - hours(2);
  Decision eight = Schedule(after_end, {whole, Request(6, 1098, 1)}, {{{0}, std::nullopt, 20}}, FairShare(),
                            kNow, keep_after);
  EXPECT_EQ(eight.reserved_gpus.size(), 8u);
  EXPECT_TRUE(Granted(eight).empty());

  // 0 is off: passed over, however long it waited.
  queue[0].queued_at = kNow - hours(100);
  EXPECT_EQ(Granted(Schedule(gpus, queue, leases, FairShare(), kNow)), (std::vector<int64_t>{2, 3}));

  // Once the lease on 0 and 1 ends, the head takes them, GPU 2, and GPU 3
  // from the backfill lease there, which is revoked for it.
  for (int i : {0, 1}) gpus[static_cast<size_t>(i)].is_leased = false;
  for (int i : {3, 7}) gpus[static_cast<size_t>(i)].is_leased = true;
  std::vector<RunningLease> later = {
      {{4, 5, 6}, std::nullopt, 11}, {{7}, std::nullopt, 13}, {{3}, std::nullopt, 12, true}};
  Decision fits = Schedule(gpus, {queue[0], queue[1]}, later, FairShare(), kNow, keep_after);
  ASSERT_EQ(fits.preemptions.size(), 1u);
  EXPECT_EQ(fits.preemptions[0].lease_id, 12);
  EXPECT_EQ(fits.preemptions[0].request_id, 1);
  ASSERT_FALSE(fits.waiting.empty());
  EXPECT_EQ(fits.waiting[0].request_id, 1);
  EXPECT_EQ(fits.waiting[0].reason, WaitReason::kPreempting);
}

// Requests that cannot fit are skipped cheaply, but never one that can: a
// small request behind many large ones still starts.
TEST(ScheduleTest, SmallRequestsBehindManyLargeOnesStillStart) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(8);
  for (int i = 0; i < 6; ++i) gpus[static_cast<size_t>(i)].is_leased = true;
  std::vector<QueuedRequest> queue = {Request(1, 1001, 4)};
  for (int id = 2; id < 100; ++id) queue.push_back(Request(id, 1001, 3));
  queue.push_back(Request(100, 1001, 1));
  queue.push_back(Request(101, 1001, 2));
  Decision d = Schedule(gpus, queue, {}, FairShare(), kNow);  // No lease ends: no reservation.
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{100}));
  EXPECT_EQ(d.waiting.size(), 100u);
}

// --- backfill ----------------------------------------------------------------

// A running backfill lease on `gpus`.
RunningLease BackfillLease(int64_t id, std::vector<int> gpus, bool is_revoking = false) {
  RunningLease l;
  l.id = id;
  l.gpus = std::move(gpus);
  l.is_backfill = true;
  l.is_revoking = is_revoking;
  return l;
}

// GPUs all held by backfill leases 101.. (one GPU each).
std::vector<GpuSlot> Backfilled(int n, std::vector<RunningLease>* leases) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(n);
  for (int i = 0; i < n; ++i) {
    gpus[static_cast<size_t>(i)].is_leased = true;
    leases->push_back(BackfillLease(101 + i, {i}));
  }
  return gpus;
}

TEST(ScheduleTest, BackfillStartsOnlyOnGpusThatAcceptItAndNeverHoldsAReservation) {
  std::vector<GpuSlot> gpus = testing::FreeGpus(4);
  gpus[0].accepts_backfill = false;
  gpus[1].accepts_backfill = false;
  Decision d = Schedule(gpus,
                        {Request(1, 1001, 1, Priority::kBackfill), Request(2, 1001, 2, Priority::kBackfill),
                         Request(3, 1001, 1, Priority::kBackfill)},
                        {}, FairShare(), kNow);
  // Request 2 (two GPUs) does not fit the two that accept backfill once
  // request 1 has one; being no head, it holds nothing back from request 3.
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(d.grants[0].gpus, (std::vector<int>{2}));
  EXPECT_EQ(d.grants[1].gpus, (std::vector<int>{3}));
  EXPECT_TRUE(d.reserved_gpus.empty());
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].request_id, 2);
}

TEST(ScheduleTest, BackfillComesAfterEveryOtherPriority) {
  Decision d = Schedule(testing::FreeGpus(1),
                        {Request(1, 1001, 1, Priority::kBackfill), Request(2, 1002, 1, Priority::kLow)}, {},
                        FairShare(), kNow);
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{2}));
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].request_id, 1);
  EXPECT_TRUE(d.preemptions.empty());
}

TEST(ScheduleTest, ARequestOnAFullyBackfilledFleetRevokesJustEnoughLeases) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(8, &leases);
  Decision d =
      Schedule(gpus, {Request(1, 1001, 2), Request(2, 1002, 1, Priority::kLow)}, leases, FairShare(), kNow);
  EXPECT_TRUE(d.grants.empty());
  // Three GPUs wanted, three one-GPU leases revoked, each for its request.
  ASSERT_EQ(d.preemptions.size(), 3u);
  std::set<int64_t> revoked;
  for (const Preemption& p : d.preemptions) revoked.insert(p.lease_id);
  EXPECT_EQ(revoked.size(), 3u);
  EXPECT_EQ(std::count_if(d.preemptions.begin(), d.preemptions.end(),
                          [](const Preemption& p) { return p.request_id == 1; }),
            2);
  ASSERT_EQ(d.waiting.size(), 2u);
  EXPECT_EQ(d.waiting[0].reason, WaitReason::kPreempting);
  EXPECT_EQ(d.waiting[1].reason, WaitReason::kPreempting);
}

// A request that must revoke backfill takes the free GPUs it can first:
// the real job waits on as few revocations as can serve it.
TEST(ScheduleTest, ARequestThatMustRevokeTakesTheFreeGpusFirst) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(4, &leases);
  gpus[2].is_leased = false;  // GPU 2's backfill is gone: free.
  leases.erase(leases.begin() + 2);
  Decision d = Schedule(gpus, {Request(1, 1001, 2)}, leases, FairShare(), kNow);
  EXPECT_TRUE(d.grants.empty());
  ASSERT_EQ(d.preemptions.size(), 1u) << "one revocation and the free GPU, not two revocations";
  EXPECT_NE(d.preemptions[0].lease_id, 103);
}

// Among backfill, the batches that stop on notice go first: the real job
// waits milliseconds for them, and up to the grace for a plain command.
TEST(ScheduleTest, ARequestThatMustRevokeTakesTheBatchesThatYieldAtNoticeFirst) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(6, &leases);
  leases[3].yields_at_notice = true;  // GPU 3.
  leases[5].yields_at_notice = true;  // GPU 5.
  Decision d = Schedule(gpus, {Request(1, 1001, 3)}, leases, FairShare(), kNow);
  std::set<int64_t> revoked;
  for (const Preemption& p : d.preemptions) revoked.insert(p.lease_id);
  ASSERT_EQ(revoked.size(), 3u);
  EXPECT_EQ(revoked.count(104), 1u);
  EXPECT_EQ(revoked.count(106), 1u);
  // With a free GPU too, the free one and the two batches, no plain command.
  gpus[0].is_leased = false;
  leases.erase(leases.begin());
  d = Schedule(gpus, {Request(1, 1001, 3)}, leases, FairShare(), kNow);
  revoked.clear();
  for (const Preemption& p : d.preemptions) revoked.insert(p.lease_id);
  EXPECT_EQ(revoked, (std::set<int64_t>{104, 106}));
}

TEST(ScheduleTest, LeasesAlreadyBeingRevokedServeTheirRequestWithoutRevokingMore) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(8, &leases);
  leases[5].is_revoking = true;
  leases[6].is_revoking = true;
  Decision d = Schedule(gpus, {Request(1, 1001, 2)}, leases, FairShare(), kNow);
  EXPECT_TRUE(d.preemptions.empty());
  ASSERT_EQ(d.waiting.size(), 1u);
  EXPECT_EQ(d.waiting[0].reason, WaitReason::kPreempting);
}

TEST(ScheduleTest, FreeGpusAreUsedBeforeAnyBackfillIsRevoked) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(4, &leases);
  gpus[3].is_leased = false;  // Its lease is gone: GPU 3 is free.
  leases.pop_back();
  Decision d = Schedule(gpus, {Request(1, 1001, 1)}, leases, FairShare(), kNow);
  EXPECT_EQ(Granted(d), (std::vector<int64_t>{1}));
  EXPECT_EQ(d.grants[0].gpus, (std::vector<int>{3}));
  EXPECT_TRUE(d.preemptions.empty());
}

TEST(ScheduleTest, NoBackfillIsRevokedForARequestThatCouldNotFitAnyway) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(2, &leases);
  std::vector<GpuSlot> more = testing::FreeGpus(4);
  more[2].is_leased = true;  // A normal lease: not preemptible.
  more[3].is_leased = true;
  for (int i = 0; i < 2; ++i) more[static_cast<size_t>(i)] = gpus[static_cast<size_t>(i)];
  Decision d = Schedule(more, {Request(1, 1001, 3), Request(2, 1001, 2, Priority::kBackfill)},
                        {leases[0], leases[1], {{2, 3}, std::nullopt}}, FairShare(), kNow);
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_TRUE(d.grants.empty());
}

TEST(ScheduleTest, GpusMadeFreeForAPreemptingRequestAreNotTakenByOthers) {
  std::vector<RunningLease> leases;
  std::vector<GpuSlot> gpus = Backfilled(2, &leases);
  gpus.push_back(testing::FreeGpus(3)[2]);  // GPU 2 free.
  // Request 1 needs all three: GPU 2 now and the two backfilled ones.
  Decision d =
      Schedule(gpus, {Request(1, 1001, 3), Request(2, 1002, 1), Request(3, 1003, 1, Priority::kBackfill)},
               leases, FairShare(), kNow);
  EXPECT_TRUE(d.grants.empty()) << "GPU 2 is kept for request 1";
  EXPECT_EQ(d.preemptions.size(), 2u);
}

}  // namespace
}  // namespace tarmac::sched
