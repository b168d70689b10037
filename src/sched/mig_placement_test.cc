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

// The GPU a MIG instance of Machine() is on ("MIG-1-3" -> "GPU-1"); empty
// for a whole GPU.
std::string ParentOf(const std::string& device) {
  if (device.rfind("MIG-", 0) != 0) return "";
  return "GPU-" + device.substr(4, device.find('-', 4) - 4);
}

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

// An instance of a degraded GPU is taken only when no ok GPU has one
// (docs/health.md), whatever packing would prefer.
TEST(MigPlacementTest, AnOkGpusInstanceIsTakenBeforeADegradedGpus) {
  std::vector<GpuSlot> gpus = Machine();
  GpuWants w;
  w.mig_profile = "1g.10gb";
  gpus[0].is_degraded = true;  // Packing alone would take GPU 0 (4 free against 7).
  std::optional<MigPick> p = PickMigInstance(gpus, w);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 1);
  for (MigSlot& m : gpus[1].mig) m.is_leased = true;  // The ok GPU is full: the degraded one serves.
  p = PickMigInstance(gpus, w);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 0);
}

TEST(MigPlacementTest, WantsThatCanNeverFitAreRefused) {
  std::vector<GpuSlot> gpus = Machine();
  GpuWants w;
  w.mig_profile = "4g.40gb";
  Status s = CheckMigWants(w, gpus);
  EXPECT_EQ(
      s.message(),
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

TEST(MigPlacementTest, BackfillTakesOnlyInstancesThatAcceptIt) {
  std::vector<GpuSlot> gpus = Machine();
  GpuWants w;
  w.mig_profile = "1g.10gb";
  gpus[0].mig[2].accepts_backfill = false;
  gpus[0].mig[3].accepts_backfill = false;
  std::optional<MigPick> p = PickMigInstance(gpus, w, /*is_backfill=*/true);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gpu, 1) << "GPU 0's 1g.10gb instances refuse backfill";
  EXPECT_EQ(PickMigInstance(gpus, w)->gpu, 0) << "other work still packs onto GPU 0";
}

// A real request for a profile that backfill holds revokes one backfill
// lease of that profile (one already being revoked first), never one of
// another profile, and is granted the instance once that lease has ended;
// a backfill request never revokes anything.
TEST(MigLeaseBookTest, ARealRequestRevokesABackfillLeaseOnAnInstanceOfItsProfile) {
  std::vector<GpuSlot> gpus = Machine();
  gpus.resize(1);  // GPU 0 only: 3g.40gb, 2g.20gb, 1g.10gb x2.
  const Caller alice{1001, "alice", false}, bob{1002, "bob", false};
  TimePoint now{};
  LeaseBook book;
  auto ask = [&](const Caller& who, const std::string& profile, Priority priority) {
    LeaseRequest r;
    r.wants.mig_profile = profile;
    r.priority = priority;
    Result<int64_t> id = book.Submit(who, r, gpus, now);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.value();
  };
  int64_t b1 = ask(alice, "1g.10gb", Priority::kBackfill);
  int64_t b2 = ask(alice, "1g.10gb", Priority::kBackfill);
  int64_t b3 = ask(alice, "3g.40gb", Priority::kBackfill);
  ASSERT_EQ(book.Decide(gpus, now).size(), 3u);
  int64_t waits = ask(alice, "1g.10gb", Priority::kBackfill);
  book.Decide(gpus, now);
  EXPECT_TRUE(book.last_decision().preemptions.empty()) << "backfill never revokes backfill";

  int64_t real = ask(bob, "1g.10gb", Priority::kLow);
  EXPECT_TRUE(book.Decide(gpus, now).empty());
  ASSERT_EQ(book.last_decision().preemptions.size(), 1u);
  EXPECT_EQ(book.last_decision().preemptions[0].lease_id, b1);
  EXPECT_EQ(book.last_decision().preemptions[0].request_id, real);
  EXPECT_TRUE(book.FindLease(b1)->revoking_since.has_value());
  EXPECT_FALSE(book.FindLease(b2)->revoking_since.has_value());
  EXPECT_FALSE(book.FindLease(b3)->revoking_since.has_value()) << "another profile is not revoked";
  bool is_preempting = false;
  for (const Waiting& w : book.last_decision().waiting)
    is_preempting |= w.request_id == real && w.reason == WaitReason::kPreempting;
  EXPECT_TRUE(is_preempting);

  // The next decision revokes nothing more: the lease being revoked is its.
  book.Decide(gpus, now);
  EXPECT_TRUE(book.last_decision().preemptions.empty());
  EXPECT_FALSE(book.FindLease(b2)->revoking_since.has_value());

  // The revoked lease ends: the real request gets its instance, before the
  // backfill request that waited longer.
  std::string instance = book.FindLease(b1)->uuids[0];
  ASSERT_TRUE(book.Release(alice, b1, now).ok());
  std::vector<Lease> granted = book.Decide(gpus, now);
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0].id, real);
  EXPECT_EQ(granted[0].uuids, std::vector<std::string>{instance});
  EXPECT_NE(book.FindPending(waits), nullptr);
  EXPECT_EQ(book.CheckInvariants(), "");
}

// The book against a model on the split machine: requests by profile, by
// UUID and for whole GPUs (backfill among them), decisions and revocations,
// releases, pods and Slurm jobs holding instances or whole GPUs (accepted
// exactly when the model says nothing above or below is held), and
// restarts through the saved JSON. After every step: no device and no
// ancestor or descendant of it in two leases, each MIG grant of the
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
    std::set<int64_t> revoked;
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
        if (next(4) == 0) r.priority = Priority::kBackfill;
        Result<int64_t> id = book.Submit(users[next(2)], r, gpus, now);
        ASSERT_TRUE(id.ok()) << id.status().ToString();
        queued[id.value()] = r;
      } else if (op < 70) {
        std::vector<Lease> granted = book.Decide(gpus, now);
        // Revocations: of backfill leases only, for requests of another
        // priority, each lease once.
        for (const Preemption& p : book.last_decision().preemptions) {
          const Lease* victim = book.FindLease(p.lease_id);
          ASSERT_NE(victim, nullptr);
          EXPECT_EQ(victim->priority, Priority::kBackfill);
          EXPECT_TRUE(victim->revoking_since.has_value());
          ASSERT_EQ(queued.count(p.request_id), 1u);
          EXPECT_NE(queued[p.request_id].priority, Priority::kBackfill);
          EXPECT_TRUE(revoked.insert(p.lease_id).second) << "lease " << p.lease_id << " revoked twice";
        }
        for (const Lease& l : granted) {
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
      } else if (op < 95) {  // The kubelet (a pod) or Slurm (a job) takes an instance or a whole GPU.
        std::vector<std::string> devices = all;
        for (const GpuSlot& g : gpus) devices.push_back(g.uuid);
        std::string uuid = devices[next(static_cast<uint32_t>(devices.size()))];
        // One occupancy: free when neither it, nor its GPU, nor one of its
        // instances is held.
        bool is_free = true;
        for (const auto& [id, device] : held) {
          is_free &= device != uuid && ParentOf(device) != uuid && device != ParentOf(uuid);
        }
        Lease pod;
        pod.uuids = {uuid};
        if (next(2) == 0) {
          pod.kind = node::LeaseKind::kPod;
        } else {
          pod.kind = node::LeaseKind::kSlurm;
          pod.slurm_job = std::to_string(step);
        }
        Result<int64_t> id = book.Hold(kubelet, pod, gpus, now);
        ASSERT_EQ(id.ok(), is_free) << uuid << ": " << id.status().ToString();
        if (id.ok()) held[id.value()] = uuid;
      } else {  // Restart through the saved JSON.
        std::vector<Lease> leases;
        std::vector<Pending> queue;
        for (const auto& [id, l] : book.leases())
          leases.push_back(LeaseFromJson(LeaseToJson(l, base), base).value());
        for (const Pending& p : book.queue())
          queue.push_back(PendingFromJson(PendingToJson(p, base), base).value());
        LeaseBook restarted;
        restarted.Restore(leases, queue, book.next_id(), book.share());
        book = std::move(restarted);
      }
      ASSERT_EQ(book.CheckInvariants(), "");
      ASSERT_EQ(book.leases().size(), held.size());
      // No device and no ancestor or descendant of it has two holders.
      for (const auto& [a_id, a_device] : held) {
        for (const auto& [b_id, b_device] : held) {
          if (a_id == b_id) continue;
          ASSERT_NE(a_device, b_device);
          ASSERT_NE(ParentOf(a_device), b_device)
              << a_device << " (lease " << a_id << ") inside " << b_device;
        }
      }
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
