// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_waiters.h"

#include <gtest/gtest.h>

#include <vector>

namespace tarmac::leases {
namespace {

using SteadyClock = std::chrono::steady_clock;

class LeaseWaitersTest : public ::testing::Test {
 protected:
  LeaseWaiters::Waiter Open(bool watches = false) {
    return {1, caller_, ipc::Reply(std::make_shared<ipc::Reply::Slot>()), now_ + std::chrono::seconds(30),
            watches};
  }
  // Queues a request for one GPU while the only GPU is taken: its id.
  int64_t Queue() {
    sched::LeaseRequest r;
    r.wants.gpu_count = 1;
    Result<int64_t> id = book_.Submit(caller_, r, busy_, now_);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.value();
  }
  LeaseWaiters::Answer Record() {
    return [this](int64_t id, const LeaseWaiters::Waiter&) { answered_.push_back(id); };
  }

  sched::Caller caller_{1001, "alice", false};
  sched::TimePoint now_ = SteadyClock::now();
  std::vector<sched::GpuSlot> busy_ = [] {
    sched::GpuSlot taken;
    taken.uuid = "GPU-0";
    taken.is_leased = true;
    return std::vector<sched::GpuSlot>{taken};
  }();
  sched::LeaseBook book_;
  std::vector<int64_t> answered_;
};

// A waiter hears only of what settles its request, and only for ids an
// event touched; a touch with no waiter is forgotten.
TEST_F(LeaseWaitersTest, OnlyTouchedSettledWaitersAreAnswered) {
  LeaseWaiters waiters;
  int64_t queued = Queue();
  int64_t gone = queued + 100;  // Not in the book: ended.
  waiters.Add(queued, Open());
  waiters.Add(gone, Open());
  waiters.AnswerTouched(book_, Record());
  EXPECT_TRUE(answered_.empty());  // Nothing touched.
  waiters.Touch(queued);
  waiters.Touch(gone);
  waiters.Touch(gone + 1);
  waiters.AnswerTouched(book_, Record());
  EXPECT_EQ(answered_, std::vector<int64_t>{gone});  // Still queued: still waits.
  EXPECT_EQ(waiters.size(), 1u);
  ASSERT_TRUE(book_.Cancel(caller_, queued).ok());
  waiters.AnswerTouched(book_, Record());  // Not touched since.
  EXPECT_EQ(answered_.size(), 1u);
  waiters.Touch(queued);
  waiters.AnswerTouched(book_, Record());
  EXPECT_EQ(answered_, (std::vector<int64_t>{gone, queued}));
  EXPECT_EQ(waiters.size(), 0u);
}

// Expire answers at the deadline, settles only what is saved, and drops a
// caller who hung up without an answer.
TEST_F(LeaseWaitersTest, ExpiryAnswersAtTheDeadlineAndDropsHungUpCallers) {
  LeaseWaiters waiters;
  int64_t queued = Queue();
  int64_t ended = queued + 100;
  waiters.Add(queued, Open());
  waiters.Add(ended, Open());
  waiters.Add(ended + 1, LeaseWaiters::Waiter{});  // Its caller is gone.
  waiters.Expire(book_, now_, /*is_saved=*/false, Record());
  EXPECT_TRUE(answered_.empty());
  EXPECT_EQ(waiters.size(), 2u);
  waiters.Expire(book_, now_, /*is_saved=*/true, Record());
  EXPECT_EQ(answered_, std::vector<int64_t>{ended});
  waiters.Expire(book_, now_ + std::chrono::seconds(30), /*is_saved=*/true, Record());
  EXPECT_EQ(answered_, (std::vector<int64_t>{ended, queued}));
  EXPECT_EQ(waiters.size(), 0u);
}

// A queued request settles no one; a watched lease that is gone settles
// its watcher.
TEST_F(LeaseWaitersTest, AQueuedRequestSettlesNoOneAndAnEndedLeaseItsWatcher) {
  EXPECT_TRUE(LeaseWaiters::IsSettled(book_, 7, Open(/*watches=*/true)));  // No such lease: ended.
  EXPECT_TRUE(LeaseWaiters::IsSettled(book_, 7, Open(/*watches=*/false)));
  int64_t queued = Queue();
  EXPECT_FALSE(LeaseWaiters::IsSettled(book_, queued, Open(/*watches=*/true)));
}

}  // namespace
}  // namespace tarmac::leases
