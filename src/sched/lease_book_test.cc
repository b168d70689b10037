// SPDX-License-Identifier: Apache-2.0
#include "sched/lease_book.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "testutil/gpu_slots.h"
#include "testutil/sched_constants.h"

namespace tarmac::sched {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

using testing::kAdmin;
using testing::kAlice;
using testing::kBob;

LeaseRequest Wants(int gpus) {
  LeaseRequest r;
  r.wants.gpu_count = gpus;
  return r;
}

TEST(LeaseBookTest, BadRequestsAreRefusedNamingTheFieldAndChangeNothing) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(8);
  struct Case {
    LeaseRequest request;
    const char* says;
  };
  LeaseRequest named_twice;
  named_twice.wants.uuids = {"GPU-1", "GPU-1"};
  LeaseRequest unknown;
  unknown.wants.uuids = {"GPU-9"};
  LeaseRequest negative_memory = Wants(1);
  negative_memory.wants.min_free_memory_bytes = -1;
  LeaseRequest zero_time = Wants(1);
  zero_time.max_time = seconds(0);
  LeaseRequest absurd_time = Wants(1);
  absurd_time.max_time = hours(24 * 365);
  LeaseRequest negative_idle = Wants(1);
  negative_idle.idle_timeout = seconds(-5);
  for (const Case& c : std::vector<Case>{{Wants(0), "at least 1"},
                                         {Wants(-3), "at least 1"},
                                         {Wants(9), "this machine has 8"},
                                         {named_twice, "named twice"},
                                         {unknown, "no such GPU"},
                                         {negative_memory, "min-free-memory"},
                                         {zero_time, "max-time must be positive"},
                                         {absurd_time, "max-time must be at most 30 days"},
                                         {negative_idle, "idle-timeout"}}) {
    Result<int64_t> r = book.Submit(kAlice, c.request, gpus, testing::kBookStart);
    ASSERT_FALSE(r.ok()) << c.says;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().ToString().find(c.says), std::string::npos) << r.status().ToString();
  }
  EXPECT_TRUE(book.queue().empty());
  EXPECT_TRUE(book.Decide(gpus, testing::kBookStart).empty());
}

TEST(LeaseBookTest, GrantedRequestsBecomeLeasesOnTheirGpus) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(4);
  LeaseRequest r = Wants(2);
  r.max_time = hours(4);
  r.command = "python train.py";
  int64_t id = book.Submit(kAlice, r, gpus, testing::kBookStart).value();
  std::vector<Lease> granted = book.Decide(gpus, testing::kBookStart);
  ASSERT_EQ(granted.size(), 1u);
  const Lease& l = granted[0];
  EXPECT_EQ(l.id, id);
  EXPECT_EQ(l.uid, 1001);
  EXPECT_EQ(l.gpus.size(), 2u);
  EXPECT_EQ(l.uuids[0], "GPU-" + std::to_string(l.gpus[0]));
  EXPECT_EQ(l.ends_at, testing::kBookStart + hours(4));
  EXPECT_EQ(l.command, "python train.py");
  EXPECT_TRUE(book.queue().empty());
  // Its GPUs are no longer free for the next request.
  book.Submit(kBob, Wants(3), gpus, testing::kBookStart).value();
  EXPECT_TRUE(book.Decide(gpus, testing::kBookStart).empty());
  ASSERT_EQ(book.last_decision().waiting.size(), 1u);
  EXPECT_EQ(book.last_decision().waiting[0].reason, WaitReason::kNoFit);
}

TEST(LeaseBookTest, OnlyTheOwnerOrAnAdminMayReleaseExtendOrCancel) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(2);
  int64_t lease = book.Submit(kAlice, Wants(2), gpus, testing::kBookStart).value();
  book.Decide(gpus, testing::kBookStart);
  int64_t queued = book.Submit(kAlice, Wants(1), gpus, testing::kBookStart).value();
  EXPECT_EQ(book.Release(kBob, lease, testing::kBookStart).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(book.Extend(kBob, lease, hours(1), testing::kBookStart).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(book.Cancel(kBob, queued).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(book.leases().size(), 1u);  // Nothing changed.
  EXPECT_EQ(book.queue().size(), 1u);
  EXPECT_TRUE(book.Extend(kAlice, lease, hours(1), testing::kBookStart).ok());
  EXPECT_TRUE(book.Cancel(kAdmin, queued).ok());
  EXPECT_TRUE(book.Release(kAdmin, lease, testing::kBookStart + hours(1)).ok());
  EXPECT_EQ(book.Release(kAlice, lease, testing::kBookStart).code(), StatusCode::kNotFound);
  EXPECT_EQ(book.Cancel(kAlice, 999).code(), StatusCode::kNotFound);
}

TEST(LeaseBookTest, ExtendingMovesTheEndWithinLimits) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(1);
  LeaseRequest r = Wants(1);
  r.max_time = hours(2);
  int64_t id = book.Submit(kAlice, r, gpus, testing::kBookStart).value();
  book.Decide(gpus, testing::kBookStart);
  EXPECT_EQ(book.Expired(testing::kBookStart + hours(2)), std::vector<int64_t>{id});
  ASSERT_TRUE(book.Extend(kAlice, id, hours(1), testing::kBookStart).ok());
  EXPECT_TRUE(book.Expired(testing::kBookStart + hours(2)).empty());
  EXPECT_EQ(book.Expired(testing::kBookStart + hours(3)), std::vector<int64_t>{id});
  EXPECT_EQ(book.Extend(kAlice, id, seconds(-1), testing::kBookStart).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(book.Extend(kAlice, id, hours(24 * 31), testing::kBookStart).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(book.leases().at(id).ends_at, testing::kBookStart + hours(3));
}

TEST(LeaseBookTest, ReleasedUseCountsAgainstTheOwnersFairShare) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(2);
  int64_t id = book.Submit(kAlice, Wants(2), gpus, testing::kBookStart).value();
  book.Decide(gpus, testing::kBookStart);
  ASSERT_TRUE(book.Release(kAlice, id, testing::kBookStart + hours(1)).ok());
  EXPECT_DOUBLE_EQ(book.share().Usage(1001, testing::kBookStart + hours(1)), 2 * 3600);
  // Now Bob, who used nothing, goes first though he asked later.
  int64_t alice = book.Submit(kAlice, Wants(2), gpus, testing::kBookStart + hours(1)).value();
  int64_t bob = book.Submit(kBob, Wants(2), gpus, testing::kBookStart + hours(1)).value();
  std::vector<Lease> granted = book.Decide(gpus, testing::kBookStart + hours(1));
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0].id, bob);
  EXPECT_EQ(book.queue().front().id, alice);
}

// A thousand requests for one or two of 8 GPUs, granted and released in a
// random interleaving: each is granted exactly once, and no GPU is ever in
// two leases.
TEST(LeaseBookTest, AThousandRequestsAreEachServedOnceWithoutSharingAGpu) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(8);
  std::mt19937 rng(7);
  TimePoint now = testing::kBookStart;
  std::set<int64_t> submitted;
  std::multiset<int64_t> granted;
  for (int i = 0; i < 1000; ++i) {
    Caller c{1000 + static_cast<int64_t>(rng() % 5), "u", false};
    submitted.insert(book.Submit(c, Wants(1 + static_cast<int>(rng() % 2)), gpus, now).value());
  }
  while (!book.queue().empty() || !book.leases().empty()) {
    now += seconds(1 + rng() % 60);
    for (const Lease& l : book.Decide(gpus, now)) granted.insert(l.id);
    ASSERT_EQ(book.CheckInvariants(), "");
    std::vector<int64_t> held;
    for (const auto& [id, l] : book.leases()) held.push_back(id);
    for (int64_t id : held) {
      if (rng() % 3 == 0) {
        ASSERT_TRUE(book.Release(kAdmin, id, now).ok());
      }
    }
  }
  EXPECT_EQ(granted.size(), 1000u);
  EXPECT_EQ(std::set<int64_t>(granted.begin(), granted.end()), submitted);
}

// A request queued for a named GPU keeps everything it asked for when a
// request behind it is granted first (compacting the queue once moved the
// kept entry onto itself, emptying its fields: it then ran on another GPU,
// with no user or command).
TEST(LeaseBookTest, AQueuedRequestKeepsItsFieldsWhenOneBehindItIsGranted) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(4);
  LeaseRequest hold;
  hold.wants.uuids = {"GPU-2"};
  ASSERT_TRUE(book.Submit(kBob, hold, gpus, testing::kBookStart).ok());
  ASSERT_EQ(book.Decide(gpus, testing::kBookStart).size(), 1u);

  LeaseRequest named;
  named.wants.uuids = {"GPU-2"};
  named.command = "sh -c 'echo $CUDA_VISIBLE_DEVICES'";
  named.max_time = hours(1);
  Result<int64_t> waiting = book.Submit(kAlice, named, gpus, testing::kBookStart + seconds(1));
  ASSERT_TRUE(waiting.ok());
  LeaseRequest any = Wants(1);
  any.command = "true";
  Result<int64_t> other = book.Submit(kBob, any, gpus, testing::kBookStart + seconds(2));
  ASSERT_TRUE(other.ok());

  std::vector<Lease> granted = book.Decide(gpus, testing::kBookStart + seconds(3));
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0].id, other.value());
  const Pending* kept = book.FindPending(waiting.value());
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->request.wants.uuids, std::vector<std::string>{"GPU-2"});
  EXPECT_EQ(kept->owner.user, "alice");
  EXPECT_EQ(kept->request.command, named.command);
  EXPECT_EQ(kept->request.max_time, hours(1));

  // Once GPU 2 is free, it is the GPU the request gets.
  ASSERT_TRUE(book.Release(kBob, 1, testing::kBookStart + seconds(4)).ok());
  granted = book.Decide(gpus, testing::kBookStart + seconds(5));
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0].uuids, std::vector<std::string>{"GPU-2"});
  EXPECT_EQ(granted[0].user, "alice");
  EXPECT_EQ(granted[0].command, named.command);
}

TEST(LeaseBookTest, ARequestThatCanNeverFitIsRefusedAtOnce) {
  LeaseBook book;
  std::vector<GpuSlot> gpus = testing::FreeGpus(4);
  for (GpuSlot& g : gpus) g.memory_total_bytes = int64_t{80} << 30;
  gpus[1].is_healthy = false;
  gpus[3].is_healthy = false;
  LeaseRequest three = Wants(3);
  Result<int64_t> r = book.Submit(kAlice, three, gpus, testing::kBookStart);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "can never fit: 3 GPUs asked for, but only 2 of this machine's 4 are healthy"),
            std::string::npos)
      << r.status().message();
  LeaseRequest big = Wants(1);
  big.wants.min_free_memory_bytes = int64_t{100} << 30;
  r = book.Submit(kAlice, big, gpus, testing::kBookStart);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the largest has 80.0 GiB"), std::string::npos) << r.status().message();
  LeaseRequest sick;
  sick.wants.uuids = {"GPU-3"};
  r = book.Submit(kAlice, sick, gpus, testing::kBookStart);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("GPU 3 (GPU-3) is not healthy"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(book.queue().empty());
  // What fits later is still queued: two healthy GPUs, both busy now.
  LeaseRequest two = Wants(2);
  EXPECT_TRUE(book.Submit(kAlice, two, gpus, testing::kBookStart).ok());
}

}  // namespace
}  // namespace tarmac::sched
