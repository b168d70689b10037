// SPDX-License-Identifier: Apache-2.0
//
// Backfill in the lease book, as an adversary would drive it: random
// sequences of requests of every priority (backfill among them), GPUs that
// accept backfill or not, GPUs that list processes (an ended lease's on
// their way out, or anyone's), decisions, holders that let go, graces that
// pass, and leases that end, each step checked against what must always
// hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "sched/lease_book.h"
#include "testutil/gpu_slots.h"
#include "testutil/sched_constants.h"

namespace tarmac::sched {
namespace {

using std::chrono::seconds;

using testing::kAdmin;

struct Step {
  std::mt19937 rng;
  int Next(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
};

LeaseRequest Ask(int gpus, Priority priority) {
  LeaseRequest r;
  r.wants.gpu_count = gpus;
  r.priority = priority;
  return r;
}

bool IsGranted(const std::vector<Lease>& granted, int64_t id) {
  return std::any_of(granted.begin(), granted.end(), [id](const Lease& l) { return l.id == id; });
}

// What must hold after each decision.
void CheckDecision(const LeaseBook& book, const std::vector<GpuSlot>& gpus, const std::vector<Lease>& granted,
                   const std::map<int64_t, bool>& was_revoking, int step) {
  ASSERT_EQ(book.CheckInvariants(), "") << "step " << step;
  // No GPU is granted while the driver lists a process there, an ended
  // lease's on its way out (emptying) or anyone else's.
  for (const Lease& l : granted) {
    for (int g : l.gpus) {
      EXPECT_FALSE(gpus[static_cast<size_t>(g)].has_foreign_processes)
          << "step " << step << ": lease " << l.id << " granted GPU " << g << " with processes on it";
    }
  }
  for (const Lease& l : granted) {
    if (l.priority != Priority::kBackfill) continue;
    for (int g : l.gpus) {
      EXPECT_TRUE(gpus[static_cast<size_t>(g)].accepts_backfill)
          << "step " << step << ": backfill on GPU " << g;
    }
  }
  std::set<int64_t> revoked_now;
  for (const Preemption& p : book.last_decision().preemptions) {
    EXPECT_TRUE(revoked_now.insert(p.lease_id).second)
        << "step " << step << ": lease revoked twice in one decision";
    const Lease* l = book.FindLease(p.lease_id);
    ASSERT_NE(l, nullptr) << "step " << step;
    EXPECT_EQ(l->priority, Priority::kBackfill) << "step " << step << ": a non-backfill lease revoked";
    EXPECT_FALSE(was_revoking.at(p.lease_id)) << "step " << step << ": revoked again";
    EXPECT_TRUE(l->revoking_since.has_value());
    EXPECT_EQ(l->revoked_for, p.request_id);
    const Pending* wants = book.FindPending(p.request_id);
    ASSERT_NE(wants, nullptr) << "step " << step << ": revoked for a request that is not waiting";
    EXPECT_NE(wants->request.priority, Priority::kBackfill)
        << "step " << step << ": backfill revoked for backfill";
  }
  // GPUs kept for the head with no start time go to no other real request
  // (EASY reservations with a start may: a request that ends in time).
  const Decision& d = book.last_decision();
  if (!d.reserved_gpus.empty() && !d.reserved_from) {
    for (const Lease& l : granted) {
      if (l.priority == Priority::kBackfill) continue;
      for (int g : l.gpus) {
        EXPECT_EQ(std::count(d.reserved_gpus.begin(), d.reserved_gpus.end(), g), 0)
            << "step " << step << ": GPU " << g << " kept for the head went to lease " << l.id;
      }
    }
  }
  // A request waiting on revocations has revoked leases behind it.
  for (const Waiting& w : book.last_decision().waiting) {
    if (w.reason != WaitReason::kPreempting) continue;
    bool has_one = false;
    for (const auto& [id, l] : book.leases()) has_one = has_one || l.revoking_since.has_value();
    EXPECT_TRUE(has_one) << "step " << step << ": request " << w.request_id << " waits on no revocation";
  }
}

TEST(BackfillPropertyTest, RandomSequencesKeepEveryRule) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Step s{std::mt19937(seed)};
    LeaseBook book;
    std::vector<GpuSlot> gpus = testing::FreeGpus(8);
    TimePoint now = testing::kBookStart;
    for (int step = 0; step < 120; ++step) {
      now += seconds(1);
      int op = s.Next(10);
      if (op < 4) {
        Caller c{1000 + s.Next(3), "u", false};
        ASSERT_TRUE(book.Submit(c, Ask(1 + s.Next(3), static_cast<Priority>(s.Next(4))), gpus, now).ok());
      } else if (op < 6 && !book.leases().empty()) {
        // A lease ends: a job finishes, a holder lets go, or a grace passes.
        auto it = book.leases().begin();
        std::advance(it, s.Next(static_cast<int>(book.leases().size())));
        ASSERT_TRUE(book.Release(kAdmin, it->first, now).ok());
      } else if (op < 7) {
        for (GpuSlot& g : gpus) g.accepts_backfill = s.Next(3) != 0;
      } else if (op < 8) {
        // A lease's job ended and the driver still lists it (emptying), or
        // someone else's process appears; or a reading shows the GPU as it is.
        GpuSlot& g = gpus[static_cast<size_t>(s.Next(8))];
        int what = s.Next(3);
        g.has_foreign_processes = what != 2;
        g.is_emptying = what == 0;
      }
      std::map<int64_t, bool> was_revoking;
      for (const auto& [id, l] : book.leases()) was_revoking[id] = l.revoking_since.has_value();
      // Every other seed keeps GPUs for a head that waited 5 s.
      std::vector<Lease> granted = book.Decide(gpus, now, seconds(seed % 2 == 0 ? 5 : 0));
      CheckDecision(book, gpus, granted, was_revoking, step);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Liveness: on a node of backfill only, a request of any other priority
// that fits the machine is granted once the leases revoked for it end.
TEST(BackfillPropertyTest, ARealRequestNeverWaitsOnBackfillBeyondOneRevocation) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Step s{std::mt19937(seed)};
    LeaseBook book;
    std::vector<GpuSlot> gpus = testing::FreeGpus(8);
    TimePoint now = testing::kBookStart;
    // Fill the node with backfill of random sizes.
    for (int i = 0; i < 12; ++i) {
      ASSERT_TRUE(
          book.Submit({2000, "batch", false}, Ask(1 + s.Next(3), Priority::kBackfill), gpus, now).ok());
    }
    book.Decide(gpus, now);
    LeaseRequest real = Ask(1 + s.Next(8), static_cast<Priority>(1 + s.Next(3)));
    Result<int64_t> id = book.Submit({1001, "alice", false}, real, gpus, now);
    ASSERT_TRUE(id.ok());
    std::vector<Lease> granted = book.Decide(gpus, now);
    bool is_granted = IsGranted(granted, id.value());
    if (!is_granted) {
      // The graces pass: every revoked lease ends; then it is granted.
      std::vector<int64_t> revoked;
      for (const auto& [lease_id, l] : book.leases()) {
        if (l.revoking_since) revoked.push_back(lease_id);
      }
      EXPECT_FALSE(revoked.empty());
      now += seconds(5);
      for (int64_t lease_id : revoked) ASSERT_TRUE(book.Release(kAdmin, lease_id, now).ok());
      granted = book.Decide(gpus, now);
      is_granted = IsGranted(granted, id.value());
    }
    EXPECT_TRUE(is_granted) << "wanted " << real.wants.gpu_count;
    // Only as many GPUs were taken from backfill as the request needed,
    // rounded up to whole leases: what is left still runs.
    int still_backfilled = 0;
    for (const auto& [lease_id, l] : book.leases()) {
      if (l.priority == Priority::kBackfill) still_backfilled += static_cast<int>(l.gpus.size());
    }
    EXPECT_LE(real.wants.gpu_count + still_backfilled, 8);
    EXPECT_EQ(book.CheckInvariants(), "");
  }
}

}  // namespace
}  // namespace tarmac::sched
