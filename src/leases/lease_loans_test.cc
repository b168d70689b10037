// SPDX-License-Identifier: Apache-2.0
//
// Loans in the lease service: a held-idle GPU of a lease that lends runs a
// queued backfill request beside its lender, in memory above the lender's
// peak plus the margin; the loan is revoked with the grace when the lender
// computes, at once when the lender allocates beyond its peak; the
// lender's processes are never signalled, and neither side's processes
// are called foreign.
#include <gtest/gtest.h>
#include <signal.h>

#include <set>

#include "testutil/lease_service_fixture.h"
#include "testutil/process_views.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;
using std::chrono::seconds;

constexpr int64_t kLender = 1002;    // bob: his client 501, his idle notebook 4242.
constexpr int64_t kBorrower = 1001;  // alice: her client 500, her engine 600.

class LoanTest : public LeaseServiceTest {
 protected:
  void SetUp() override {
    processes_.Add(500, kBorrower, 10);
    processes_.Add(501, kLender, 11);
    processes_.Add(4242, kLender, 12);
    processes_.Add(600, kBorrower, 20);
    LeasePolicy policy;
    policy.backfill.lend_after = seconds(60);
    policy.backfill.grace = seconds(5);
    s_ = Make(policy);
  }
  // One 80 GiB GPU: bob's notebook (`lender_gib`, `lender_sm`) and, once
  // lent, alice's engine (`loan_gib`).
  void Tick(int64_t lender_gib, double lender_sm, int64_t loan_gib = 0) {
    node::NodeView f = Machine(1);
    f.gpus[0].sample.memory_total_bytes = 80 * kGiB;
    f.gpus[0].sample.utilization_gpu_ratio = lender_sm;
    node::ProcessView notebook =
        testing::Process(4242, lender_gib * kGiB, lender_sm, kLender, "python", 1, 12);
    f.gpus[0].processes.push_back(notebook);
    if (loan_gib > 0)
      f.gpus[0].processes.push_back(testing::Process(600, loan_gib * kGiB, 0.9, kBorrower, "engine", 1, 20));
    s_->OnTick(f, clock_.SteadyNow());
  }
  // Bob's lease (1) lends; alice's backfill request (2) waits.
  void LeaseAndQueue(bool lends) {
    node::NodeView empty = Machine(1);
    empty.gpus[0].sample.memory_total_bytes = 80 * kGiB;
    s_->OnTick(empty, clock_.SteadyNow());
    json lease =
        Call(s_.get(), "lease.request",
             {{"gpus", 1}, {"kind", "reservation"}, {"max_time_seconds", 36000}, {"lend_idle", lends}},
             kLender, 501);
    ASSERT_EQ(lease["result"]["state"], "granted") << lease.dump();
    json backfill = Call(s_.get(), "lease.request",
                         {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, kBorrower, 500);
    ASSERT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
  }
  json Lease(int64_t id) { return Call(s_.get(), "lease.get", {{"id", id}})["result"]; }
  json Events() { return Call(s_.get(), "events", json::object(), 0, 1); }
  // Whether a `preempting` event's detail says `words`.
  bool PreemptingSays(const std::string& words) {
    json events = Events();
    for (const json& e : events["result"]["events"]) {
      if (e["kind"] == "preempting" && e["detail"].get<std::string>().find(words) != std::string::npos)
        return true;
    }
    return false;
  }
  // Two empty 80 GiB GPUs; bob's lease of both (`kind`) lends; alice's two
  // one-GPU backfill requests (2 and 3) wait.
  void TwoGpuLenderAndTwoQueued(const char* kind) {
    node::NodeView empty = Machine(2);
    for (node::GpuView& g : empty.gpus) g.sample.memory_total_bytes = 80 * kGiB;
    s_->OnTick(empty, clock_.SteadyNow());
    json lease =
        Call(s_.get(), "lease.request",
             {{"gpus", 2}, {"kind", kind}, {"max_time_seconds", 36000}, {"lend_idle", true}}, kLender, 501);
    ASSERT_EQ(lease["result"]["state"], "granted") << lease.dump();
    for (int i = 0; i < 2; ++i) {
      json backfill = Call(s_.get(), "lease.request",
                           {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, kBorrower, 500);
      ASSERT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
    }
  }
  // Lends GPU 0 to lease 2 and marks alice's engine as the loan's.
  void Lend() {
    Tick(20, 0);
    clock_.Advance(seconds(61));
    Tick(20, 0);
    json loan = Lease(2);
    ASSERT_EQ(loan["state"], "granted") << loan.dump();
    processes_.lease_members[loan["lease"]["token"].get<std::string>()] = {600};
  }

  std::unique_ptr<LeaseService> s_;
};

TEST_F(LoanTest, AnIdleLenderLendsItsMemoryAbovePeakPlusMargin) {
  LeaseAndQueue(true);
  Tick(20, 0.5);  // The notebook computed: lend_after, with no pause of its seen yet.
  Tick(20, 0);
  clock_.Advance(seconds(59));
  Tick(20, 0);
  EXPECT_EQ(Lease(2)["state"], "queued") << "not idle for lend_after yet";
  clock_.Advance(seconds(2));
  Tick(20, 0);
  json loan = Lease(2);
  ASSERT_EQ(loan["state"], "granted") << loan.dump();
  EXPECT_EQ(loan["lease"]["lent_from"], 1);
  EXPECT_EQ(loan["lease"]["lent_memory_bytes"], (80 - 20 - 4) * kGiB);
  EXPECT_EQ(loan["lease"]["gpus"][0], 0);
  EXPECT_EQ(Lease(1)["state"], "granted") << "the lender keeps its lease";
  EXPECT_EQ(CountKind(Events(), "lent"), 1) << Events().dump();
  // Status shows the GPU as the lender's, lent to the loan.
  const node::GpuLease& mark = s_->Marks()->leases.at(0);
  EXPECT_EQ(mark.id, 1);
  EXPECT_EQ(mark.lent_to, 2);
  // Alice's engine beside bob's notebook: neither is foreign to the other.
  processes_.lease_members[loan["lease"]["token"].get<std::string>()] = {600};
  Tick(20, 0, 30);
  Tick(20, 0, 30);
  EXPECT_EQ(CountKind(Events(), "foreign_process"), 0) << Events().dump();
  EXPECT_EQ(Lease(2)["state"], "granted");
  EXPECT_TRUE(processes_.signals.empty());
}

// A two-GPU reservation: bob's idle notebook on GPU 0, nothing on GPU 1.
// Each GPU is lent on its own (GPU 1 whole, less the margin), after a tenth
// of lend_after (bob has computed on neither); bob computing on GPU 0
// revokes that loan with the grace and leaves GPU 1's; bob starting a
// process on GPU 1 revokes its loan at once.
TEST_F(LoanTest, EachGpuOfAReservationIsLentAndRecalledOnItsOwn) {
  processes_.Add(4243, kLender, 13);
  processes_.Add(601, kBorrower, 21);
  auto tick = [&](double notebook_sm, bool started_on_1, bool engines) {
    node::NodeView f = Machine(2);
    for (node::GpuView& g : f.gpus) g.sample.memory_total_bytes = 80 * kGiB;
    f.gpus[0].processes.push_back(testing::Process(4242, 20 * kGiB, notebook_sm, kLender, "python", 1, 12));
    if (started_on_1)
      f.gpus[1].processes.push_back(testing::Process(4243, 2 * kGiB, 0, kLender, "python", 1, 13));
    if (engines) {
      f.gpus[0].processes.push_back(testing::Process(600, 30 * kGiB, 0.9, kBorrower, "engine", 1, 20));
      f.gpus[1].processes.push_back(testing::Process(601, 30 * kGiB, 0.9, kBorrower, "engine", 1, 21));
    }
    s_->OnTick(f, clock_.SteadyNow());
  };
  TwoGpuLenderAndTwoQueued("reservation");
  if (HasFatalFailure()) return;
  tick(0, false, false);
  clock_.Advance(seconds(5));
  tick(0, false, false);
  EXPECT_EQ(Lease(2)["state"], "queued") << "a tenth of lend_after (6 s) not passed yet";
  // `backfill status` says who lends each GPU, after how long, and why.
  json gates = Call(s_.get(), "backfill.gpus", json::object());
  ASSERT_EQ(gates["result"]["gpus"].size(), 2u) << gates.dump();
  for (const json& g : gates["result"]["gpus"]) {
    EXPECT_EQ(g["lend"]["lender"], 1) << g.dump();
    EXPECT_EQ(g["lend"]["delay_seconds"], 6) << g.dump();
    EXPECT_NE(g["lend"]["delay_why"].get<std::string>().find("has not computed on it"), std::string::npos);
  }
  clock_.Advance(seconds(2));
  tick(0, false, false);
  json on0 = Lease(2), on1 = Lease(3);
  ASSERT_EQ(on0["state"], "granted") << on0.dump();
  ASSERT_EQ(on1["state"], "granted") << on1.dump();
  EXPECT_EQ(on0["lease"]["gpus"], json::array({0}));
  EXPECT_EQ(on1["lease"]["gpus"], json::array({1}));
  EXPECT_EQ(on0["lease"]["lent_memory_bytes"], (80 - 20 - 4) * kGiB);
  EXPECT_EQ(on1["lease"]["lent_memory_bytes"], (80 - 4) * kGiB) << "an empty GPU lent whole, less the margin";
  EXPECT_EQ(s_->Marks()->leases.at(0).lent_to, 2);
  EXPECT_EQ(s_->Marks()->leases.at(1).lent_to, 3);
  processes_.lease_members[on0["lease"]["token"].get<std::string>()] = {600};
  processes_.lease_members[on1["lease"]["token"].get<std::string>()] = {601};
  tick(0, false, true);
  EXPECT_TRUE(Lease(2)["lease"]["revoking_since_unix"].is_null());
  tick(0.5, false, true);  // Bob computes on GPU 0.
  EXPECT_FALSE(Lease(2)["lease"]["revoking_since_unix"].is_null()) << Lease(2).dump();
  EXPECT_TRUE(Lease(3)["lease"]["revoking_since_unix"].is_null()) << "GPU 1's loan stands";
  EXPECT_TRUE(processes_.signals.empty()) << "the grace first";
  tick(0.5, true, true);  // Bob starts something on GPU 1: at once.
  json gone = Lease(3);
  EXPECT_TRUE(gone["state"] == "ended" || !gone["lease"]["revoking_since_unix"].is_null()) << gone.dump();
  EXPECT_EQ(Lease(2)["state"], "granted") << "GPU 0's loan is in its grace";
  ASSERT_FALSE(processes_.signals.empty());
  for (const auto& [pid, sig] : processes_.signals) {
    EXPECT_EQ(pid, 601) << "only GPU 1's loan is ended at once; never bob's";
  }
  EXPECT_TRUE(PreemptingSays("started a process on GPU 1")) << Events().dump();
}

// A job's GPU with nothing on it yet is never lent (its command may be
// about to start there); its GPU with an idle process is.
TEST_F(LoanTest, AJobsGpuWithNothingOnItIsNotLent) {
  TwoGpuLenderAndTwoQueued("run");
  if (HasFatalFailure()) return;
  node::NodeView f = Machine(2);
  for (node::GpuView& g : f.gpus) g.sample.memory_total_bytes = 80 * kGiB;
  f.gpus[0].processes.push_back(testing::Process(4242, 20 * kGiB, 0, kLender, "python", 1, 12));
  s_->OnTick(f, clock_.SteadyNow());
  clock_.Advance(seconds(7));
  s_->OnTick(f, clock_.SteadyNow());
  json on0 = Lease(2);
  ASSERT_EQ(on0["state"], "granted") << on0.dump();
  EXPECT_EQ(on0["lease"]["gpus"], json::array({0}));
  EXPECT_EQ(Lease(3)["state"], "queued") << "GPU 1 of the job is never lent while empty";
}

TEST_F(LoanTest, ALeaseThatDoesNotLendIsNeverLent) {
  LeaseAndQueue(false);
  Tick(20, 0);
  clock_.Advance(seconds(600));
  Tick(20, 0);
  EXPECT_EQ(Lease(2)["state"], "queued");
  EXPECT_EQ(CountKind(Events(), "lent"), 0);
}

TEST_F(LoanTest, TheLenderComputingAgainRevokesTheLoanWithTheGrace) {
  LeaseAndQueue(true);
  Lend();
  Tick(20, 0.5, 30);  // Bob's notebook computes again.
  json loan = Lease(2);
  ASSERT_EQ(loan["state"], "granted") << loan.dump();
  EXPECT_FALSE(loan["lease"]["revoking_since_unix"].is_null()) << loan.dump();
  EXPECT_TRUE(processes_.signals.empty()) << "the grace first";
  clock_.Advance(seconds(6));
  Tick(20, 0.5, 30);
  EXPECT_EQ(processes_.signals.front(), (std::pair<int64_t, int>{600, SIGKILL}))
      << "its grace was its time to let go";
  for (const auto& [pid, sig] : processes_.signals) EXPECT_NE(pid, 4242) << "never the lender's process";
  processes_.table.erase(600);
  Tick(20, 0.5);
  EXPECT_EQ(Lease(2)["state"], "ended");
  EXPECT_EQ(Lease(1)["state"], "granted");
  json events = Events();
  EXPECT_EQ(CountKind(events, "preempting"), 1) << events.dump();
  EXPECT_EQ(CountKind(events, "preempted"), 1) << events.dump();
  EXPECT_EQ(CountKind(events, "foreign_process"), 0) << events.dump();
}

TEST_F(LoanTest, TheLenderAllocatingBeyondItsPeakRevokesTheLoanAtOnce) {
  LeaseAndQueue(true);
  Lend();
  Tick(22, 0, 30);  // Bob's notebook holds 2 GiB more than its peak: still at 0 % SM.
  ASSERT_FALSE(processes_.signals.empty()) << "no grace: memory is at stake";
  EXPECT_EQ(processes_.signals.front().first, 600);
  for (const auto& [pid, sig] : processes_.signals) EXPECT_NE(pid, 4242);
  processes_.table.erase(600);
  Tick(22, 0);
  EXPECT_EQ(Lease(2)["state"], "ended");
  EXPECT_TRUE(PreemptingSays("beyond their peak")) << Events().dump();
}

// The borrower's child that detached and dropped the loan's token (`setsid
// env -u TARMAC_LEASE_TOKEN ...`) is the loan's: its memory is counted as the
// loan's, not as the lender's growth, and a revocation ends it too, never
// the lender's notebook.
TEST_F(LoanTest, RegressionADetachedChildWithoutTheTokenIsTheLoansAndEndsWithIt) {
  LeaseAndQueue(true);
  Lend();
  processes_.Add(700, kBorrower, 30);  // alice's escaped child: no token.
  auto tick = [&](int64_t lender_gib, double lender_sm) {
    node::NodeView f = Machine(1);
    f.gpus[0].sample.memory_total_bytes = 80 * kGiB;
    f.gpus[0].sample.utilization_gpu_ratio = 0.9;
    f.gpus[0].processes.push_back(
        testing::Process(4242, lender_gib * kGiB, lender_sm, kLender, "python", 1, 12));
    f.gpus[0].processes.push_back(testing::Process(600, 10 * kGiB, 0.9, kBorrower, "engine", 1, 20));
    f.gpus[0].processes.push_back(testing::Process(700, 30 * kGiB, 0.0, kBorrower, "python", 1, 30));
    s_->OnTick(f, clock_.SteadyNow());
  };
  // 30 GiB more on the GPU, none of it the lender's: the loan stays.
  tick(20, 0);
  EXPECT_TRUE(Lease(2)["lease"]["revoking_since_unix"].is_null()) << Lease(2).dump();
  EXPECT_TRUE(processes_.signals.empty());
  // The lender computes again: the loan is revoked with the grace, and once
  // it is over both of the loan's processes are signalled, the lender's not.
  tick(20, 0.8);
  EXPECT_FALSE(Lease(2)["lease"]["revoking_since_unix"].is_null()) << Lease(2).dump();
  clock_.Advance(seconds(6));
  tick(20, 0.8);
  std::set<int64_t> signalled;
  for (const auto& [pid, sig] : processes_.signals) signalled.insert(pid);
  EXPECT_EQ(signalled, (std::set<int64_t>{600, 700}));
}

// A process of another user on the lent GPU (not there when the loan began,
// no token) is never the loan's: a revocation leaves it.
TEST_F(LoanTest, AnotherUsersProcessOnTheLentGpuIsNeverTheLoans) {
  LeaseAndQueue(true);
  Lend();
  processes_.Add(4343, kLender, 40);  // bob starts another process, without his lease's token.
  node::NodeView f = Machine(1);
  f.gpus[0].sample.memory_total_bytes = 80 * kGiB;
  f.gpus[0].processes.push_back(testing::Process(4242, 30 * kGiB, 0, kLender, "python", 1, 12));
  f.gpus[0].processes.push_back(testing::Process(4343, 1 * kGiB, 0, kLender, "python", 1, 40));
  f.gpus[0].processes.push_back(testing::Process(600, 10 * kGiB, 0.9, kBorrower, "engine", 1, 20));
  s_->OnTick(f, clock_.SteadyNow());  // Bob beyond his peak: revoked at once.
  ASSERT_FALSE(processes_.signals.empty());
  for (const auto& [pid, sig] : processes_.signals) EXPECT_EQ(pid, 600);
}

TEST_F(LoanTest, RegressionALoanInItsGraceIsKilledAtOnceWhenTheLenderThenAllocatesBeyondItsPeak) {
  LeaseAndQueue(true);
  Lend();
  Tick(20, 0.5, 30);  // Computes: revoked with the grace.
  EXPECT_TRUE(processes_.signals.empty());
  clock_.Advance(seconds(1));
  Tick(23, 0.5, 30);  // Then allocates beyond its peak, within the grace.
  ASSERT_FALSE(processes_.signals.empty()) << "not left to the end of the grace";
  EXPECT_EQ(processes_.signals.front().first, 600);
}

TEST_F(LoanTest, ALoanHoldingMoreThanLentIsRevokedAtOnce) {
  LeaseAndQueue(true);
  Lend();
  Tick(20, 0, 57);  // 56 GiB lent.
  ASSERT_FALSE(processes_.signals.empty());
  EXPECT_EQ(processes_.signals.front().first, 600);
}

TEST_F(LoanTest, TheLoanOutlivesItsLenderAsAnOrdinaryBackfillLease) {
  LeaseAndQueue(true);
  Lend();
  ASSERT_EQ(Call(s_.get(), "lease.release", {{"id", 1}}, kLender, 501)["ok"], true);
  node::NodeView f = Machine(1);
  f.gpus[0].sample.memory_total_bytes = 80 * kGiB;
  f.gpus[0].processes.push_back(testing::Process(600, 30 * kGiB, 0.9, kBorrower, "engine", 1, 20));
  s_->OnTick(f, clock_.SteadyNow());
  json loan = Lease(2);
  ASSERT_EQ(loan["state"], "granted") << loan.dump();
  EXPECT_EQ(loan["lease"]["lent_from"], 0);
  // A real request now revokes it as any backfill lease.
  json real = Call(s_.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, kLender, 501);
  EXPECT_EQ(real["result"]["state"], "queued") << real.dump();
  EXPECT_FALSE(Lease(2)["lease"]["revoking_since_unix"].is_null());
}

// Bob's `tarmac run` lends its idle notebook's GPU; a real request of his
// waits for it. When his job ends, the loan is revoked at once for that
// request (what his job left is on its way out), not at the next reading;
// the request gets the GPU once the loan has let go and a reading shows it
// empty.
TEST_F(LoanTest, ARealRequestRevokesTheLoanOnALendersGpuTheMomentTheLenderEnds) {
  node::NodeView empty = Machine(1);
  empty.gpus[0].sample.memory_total_bytes = 80 * kGiB;
  s_->OnTick(empty, clock_.SteadyNow());
  json job =
      Call(s_.get(), "lease.request", {{"gpus", 1}, {"kind", "run"}, {"lend_idle", true}}, kLender, 501);
  ASSERT_EQ(job["result"]["state"], "granted") << job.dump();
  json backfill = Call(s_.get(), "lease.request",
                       {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, kBorrower, 500);
  ASSERT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
  Lend();
  Tick(20, 0, 30);
  json real = Call(s_.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, kLender, 501);
  ASSERT_EQ(real["result"]["state"], "queued") << real.dump();
  EXPECT_TRUE(Lease(2)["lease"]["revoking_since_unix"].is_null()) << "its lender holds the GPU";

  processes_.table.erase(4242);  // Bob's job exited; his client lets go.
  ASSERT_EQ(Call(s_.get(), "lease.release", {{"id", 1}}, kLender, 501)["ok"], true);
  EXPECT_FALSE(Lease(2)["lease"]["revoking_since_unix"].is_null()) << Lease(2).dump();
  EXPECT_TRUE(PreemptingSays("revoked for request 3"));
  EXPECT_EQ(Lease(3)["state"], "queued");

  // The loan lets go; a reading shows the GPU empty: the request gets it.
  ASSERT_EQ(Call(s_.get(), "lease.release", {{"id", 2}}, kBorrower, 500)["ok"], true);
  EXPECT_EQ(Lease(3)["state"], "queued") << "not before a reading";
  s_->OnTick(empty, clock_.SteadyNow());
  EXPECT_EQ(Lease(3)["state"], "granted") << Lease(3).dump();
}

// The same user's batch borrowing the same user's idle GPU: the processes
// are told apart by the loan's token, not by their owner.
TEST_F(LoanTest, ALoanOfTheLendersOwnUserIsToldApartByItsToken) {
  node::NodeView empty = Machine(1);
  empty.gpus[0].sample.memory_total_bytes = 80 * kGiB;
  s_->OnTick(empty, clock_.SteadyNow());
  processes_.Add(601, kLender, 21);
  json lease = Call(s_.get(), "lease.request",
                    {{"gpus", 1},
                     {"kind", "reservation"},
                     {"max_time_seconds", 36000},
                     {"lend_idle", true},
                     {"idle_timeout_seconds", 120}},
                    kLender, 501);
  ASSERT_EQ(lease["result"]["state"], "granted") << lease.dump();
  json backfill = Call(s_.get(), "lease.request",
                       {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, kLender, 501);
  ASSERT_EQ(backfill["result"]["state"], "queued") << backfill.dump();
  auto tick = [&](bool with_engine) {
    node::NodeView f = Machine(1);
    f.gpus[0].sample.memory_total_bytes = 80 * kGiB;
    f.gpus[0].processes.push_back(testing::Process(4242, 20 * kGiB, 0, kLender, "python", 1, 12));
    if (with_engine) {
      f.gpus[0].processes.push_back(testing::Process(601, 30 * kGiB, 0.9, kLender, "engine", 1, 21));
      f.gpus[0].sample.utilization_gpu_ratio = 0.9;
    }
    s_->OnTick(f, clock_.SteadyNow());
  };
  tick(false);
  clock_.Advance(seconds(61));
  tick(false);
  json loan =
      Call(s_.get(), "lease.get", {{"id", 2}}, kLender, 501)["result"];  // Its token: to its owner only.
  ASSERT_EQ(loan["state"], "granted") << loan.dump();
  processes_.lease_members[loan["lease"]["token"].get<std::string>()] = {601};
  // The engine computes beside the idle notebook: the loan stays, and the
  // lender is still idle to its own policy.
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(seconds(30));
    tick(true);
  }
  EXPECT_TRUE(Lease(2)["lease"]["revoking_since_unix"].is_null()) << Lease(2).dump();
  EXPECT_EQ(CountKind(Events(), "idle_warning"), 1) << Events().dump();
  EXPECT_TRUE(processes_.signals.empty());
}

TEST_F(LoanTest, ALoanSurvivesARestart) {
  LeaseAndQueue(true);
  Lend();
  s_ = Make();
  ASSERT_TRUE(s_->Restore().ok());
  json loan = Lease(2);
  ASSERT_EQ(loan["state"], "granted") << loan.dump();
  EXPECT_EQ(loan["lease"]["lent_from"], 1);
  EXPECT_EQ(loan["lease"]["lent_memory_bytes"], 56 * kGiB);
}

}  // namespace
}  // namespace tarmac::leases
