// SPDX-License-Identifier: Apache-2.0
//
// MIG placement (mig_placement.h) and the lease book with MIG instances:
// packing, refusals, and a model-based run of random requests, grants,
// releases, pod holds and restarts on a split machine, checked against a
// reference model after every step.
#include "sched/mig_placement.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "sched/lease_book.h"
#include "sched/lease_json.h"

namespace tarmac::sched {
namespace {

using TimePoint = std::chrono::steady_clock::time_point;

// GPU 0: 3g.40gb + 2g.20gb + two 1g.10gb; GPU 1: seven 1g.10gb; GPU 2: whole.
std::vector<GpuSlot> Machine() {
  std::vector<GpuSlot> gpus(3);
  for (int i = 0; i < 3; ++i) {
    gpus[static_cast<size_t>(i)].index = i;
    gpus[static_cast<size_t>(i)].uuid = "GPU-" + std::to_string(i);
    gpus[static_cast<size_t>(i)].memory_total_bytes = int64_t{80} << 30;
    gpus[static_cast<size_t>(i)].memory_free_bytes = int64_t{80} << 30;
  }
  auto add = [&](int gpu, const std::string& profile) {
    GpuSlot& g = gpus[static_cast<size_t>(gpu)];
    g.is_mig_enabled = true;
    MigSlot m;
    m.uuid = fmt::format("MIG-{}-{}", gpu, g.mig.size());
    m.profile = profile;
    g.mig.push_back(m);
  };
  add(0, "3g.40gb");
  add(0, "2g.20gb");
  add(0, "1g.10gb");
  add(0, "1g.10gb");
  for (int i = 0; i < 7; ++i) add(1, "1g.10gb");
  return gpus;
}

TEST(MigPlacementTest, PacksOntoTheGpuWithFewestFreeInstances) {
  std::vector<GpuSlot> gpus = Machine();
  GpuWants w;
  w.mig_profile = "1g.10gb";
  std::optional<MigPick> p = PickMigInstance(gpus, w);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 0);  // 4 free there, 7 on GPU 1.
  EXPECT_EQ(p->uuid, "MIG-0-2");
  gpus[0].mig[2].is_leased = true;
  gpus[0].mig[3].has_foreign_processes = true;  // Someone runs there outside a lease.
  p = PickMigInstance(gpus, w);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 1);
  gpus[1].is_healthy = false;
  EXPECT_FALSE(PickMigInstance(gpus, w).has_value());
  w.mig_profile.clear();
  w.uuids = {"MIG-0-1"};
  p = PickMigInstance(gpus, w);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->profile, "2g.20gb");
}

TEST(MigPlacementTest, WantsThatCanNeverFitAreRefused) {
  std::vector<GpuSlot> gpus = Machine();
  GpuWants w;
  w.mig_profile = "4g.40gb";
  Status s = CheckMigWants(w, gpus);
  EXPECT_EQ(s.message(),
            "can never fit: no MIG instance of profile '4g.40gb' on this machine (it has 1g.10gb x9, 2g.20gb x1, "
            "3g.40gb x1)");
  w.mig_profile.clear();
  w.uuids = {"MIG-4-4"};
  EXPECT_EQ(CheckMigWants(w, gpus).code(), StatusCode::kInvalidArgument);
  w.uuids = {"MIG-0-0", "MIG-0-1"};
  EXPECT_EQ(CheckMigWants(w, gpus).message(), "mig: a lease takes one MIG instance");
  w.uuids = {"MIG-0-0"};
  EXPECT_TRUE(CheckMigWants(w, gpus).ok());
  std::vector<GpuSlot> plain(1);
  w.uuids.clear();
  w.mig_profile = "1g.10gb";
  EXPECT_NE(CheckMigWants(w, plain).message().find("this machine has no MIG instances"), std::string::npos);
}

// The book against a model on the split machine: requests by profile, by
// UUID and for whole GPUs, decisions, releases, pods holding instances, and
// restarts through the saved JSON. After every step: no instance in two
// leases, no GPU with instances leased whole, each MIG grant of the
// profile or instance asked, and the book's leases the model's.
TEST(MigLeaseModelTest, RandomSequencesKeepEveryInstanceInOneLease) {
  const Caller users[] = {{1001, "alice", false}, {1002, "bob", false}};
  const Caller kubelet{0, "kubelet", false};
  const char* profiles[] = {"1g.10gb", "2g.20gb", "3g.40gb"};
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 random(seed);
    auto next = [&random](uint32_t bound) { return static_cast<uint32_t>(random() % bound); };
    std::vector<GpuSlot> gpus = Machine();
    std::vector<std::string> all;
    for (const GpuSlot& g : gpus) {
      for (const MigSlot& m : g.mig) all.push_back(m.uuid);
    }
    TimeBase base{TimePoint{} + std::chrono::hours(1000), std::chrono::system_clock::from_time_t(1800000000)};
    TimePoint now = base.steady;
    LeaseBook book;
    std::map<int64_t, LeaseRequest> queued;
    std::map<int64_t, std::string> held;  // Lease -> its device (MIG UUID or "GPU-2").
    for (int step = 0; step < 3000; ++step) {
      SCOPED_TRACE(fmt::format("seed {} step {}", seed, step));
      now += std::chrono::seconds(1 + next(10));
      uint32_t op = next(100);
      if (op < 40) {
        LeaseRequest r;
        uint32_t kind = next(3);
        if (kind == 0) r.wants.mig_profile = profiles[next(3)];
        if (kind == 1) r.wants.uuids = {all[next(static_cast<uint32_t>(all.size()))]};
        r.command = fmt::format("job-{}", step);
        Result<int64_t> id = book.Submit(users[next(2)], r, gpus, now);
        ASSERT_TRUE(id.ok()) << id.status().ToString();
        queued[id.value()] = r;
      } else if (op < 70) {
        for (const Lease& l : book.Decide(gpus, now)) {
          ASSERT_EQ(queued.count(l.id), 1u);
          const LeaseRequest& r = queued[l.id];
          if (!r.wants.mig_profile.empty()) {
            ASSERT_TRUE(IsMigLease(l));
            const MigSlot* m = FindMigSlot(gpus, l.uuids[0]);
            ASSERT_NE(m, nullptr);
            EXPECT_EQ(m->profile, r.wants.mig_profile);
            EXPECT_EQ(l.mig_profile, r.wants.mig_profile);
          } else if (!r.wants.uuids.empty()) {
            EXPECT_EQ(l.uuids, r.wants.uuids);
          } else {
            EXPECT_EQ(l.gpus, std::vector<int>{2}) << "a whole-GPU request took a GPU with instances";
          }
          held[l.id] = l.uuids[0];
          queued.erase(l.id);
        }
      } else if (op < 85) {
        if (held.empty()) continue;
        auto it = held.begin();
        std::advance(it, next(static_cast<uint32_t>(held.size())));
        ASSERT_TRUE(book.Release({0, "root", true}, it->first, now).ok());
        held.erase(it);
      } else if (op < 95) {  // The kubelet allocates an instance to a pod.
        std::string uuid = all[next(static_cast<uint32_t>(all.size()))];
        bool is_free = true;
        for (const auto& [id, device] : held) is_free &= device != uuid;
        Lease pod;
        pod.uuids = {uuid};
        pod.is_pod = true;
        Result<int64_t> id = book.Hold(kubelet, pod, gpus, now);
        ASSERT_EQ(id.ok(), is_free) << uuid << ": " << id.status().ToString();
        if (id.ok()) held[id.value()] = uuid;
      } else {  // Restart through the saved JSON.
        std::vector<Lease> leases;
        std::vector<Pending> queue;
        for (const auto& [id, l] : book.leases()) leases.push_back(LeaseFromJson(LeaseToJson(l, base), base).value());
        for (const Pending& p : book.queue()) queue.push_back(PendingFromJson(PendingToJson(p, base), base).value());
        LeaseBook restarted;
        restarted.Restore(leases, queue, book.next_id(), book.share());
        book = std::move(restarted);
      }
      ASSERT_EQ(book.CheckInvariants(), "");
      ASSERT_EQ(book.leases().size(), held.size());
      std::set<std::string> devices;
      for (const auto& [id, l] : book.leases()) {
        ASSERT_EQ(held.count(id), 1u);
        ASSERT_EQ(l.uuids[0], held[id]);
        ASSERT_TRUE(devices.insert(l.uuids[0]).second) << l.uuids[0] << " is in two leases";
      }
      ASSERT_EQ(book.queue().size(), queued.size());
      for (const Pending& p : book.queue()) {
        ASSERT_EQ(queued.count(p.id), 1u);
        EXPECT_EQ(p.request.wants.mig_profile, queued[p.id].wants.mig_profile);
        EXPECT_EQ(p.request.wants.uuids, queued[p.id].wants.uuids);
      }
    }
  }
}

}  // namespace
}  // namespace tarmac::sched
