// SPDX-License-Identifier: Apache-2.0
//
// How soon a GPU goes from one holder to the next: a finished job's GPU is
// read again at once while a request waits (not at the next tick), and
// never handed on before a reading shows it empty.
#include <gtest/gtest.h>

#include "leases/lease_service.h"
#include "testutil/lease_service_fixture.h"
#include "testutil/process_views.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;

// Alice's `tarmac run` (lease 1, her client 500) computes on the one GPU
// (her job 600); bob's request (2, client 501) waits for it when `waits`.
class HandoverTest : public LeaseServiceTest {
 protected:
  std::unique_ptr<LeaseService> JobAndWaiting(bool waits, int* asked) {
    processes_.Add(500, 1001, 10);
    processes_.Add(501, 1002, 11);
    processes_.Add(600, 1001, 20);
    std::unique_ptr<LeaseService> s = Make();
    s->OnWantsReading([asked] { ++*asked; });
    s->OnTick(Machine(1), clock_.SteadyNow());
    json run = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "run"}}, 1001, 500);
    EXPECT_EQ(run["result"]["state"], "granted") << run.dump();
    s->OnTick(Machine(1, {{0, testing::Process(600, 30 * kGiB, 0.9, 1001, "python", 1, 20)}}),
              clock_.SteadyNow());
    if (waits) {
      json queued = Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}}, 1002, 501);
      EXPECT_EQ(queued["result"]["state"], "queued") << queued.dump();
    }
    return s;
  }
  std::string State(LeaseService* s, int64_t id) {
    return Call(s, "lease.get", {{"id", id}})["result"]["state"].get<std::string>();
  }
};

TEST_F(HandoverTest, AFinishedJobsGpuIsReadAgainAtOnceWhileARequestWaits) {
  int asked = 0;
  std::unique_ptr<LeaseService> s = JobAndWaiting(true, &asked);
  processes_.table.erase(600);  // The job exited; its client lets go.
  ASSERT_EQ(Call(s.get(), "lease.release", {{"id", 1}}, 1001, 500)["ok"], true);
  EXPECT_EQ(asked, 1);
  // Not before a reading shows the GPU empty.
  EXPECT_EQ(State(s.get(), 2), "queued");
  s->OnTick(Machine(1), clock_.SteadyNow());
  EXPECT_EQ(State(s.get(), 2), "granted");
}

TEST_F(HandoverTest, NoReadingIsAskedAtTheEndWhenNothingWaits) {
  int asked = 0;
  std::unique_ptr<LeaseService> s = JobAndWaiting(false, &asked);
  processes_.table.erase(600);
  ASSERT_EQ(Call(s.get(), "lease.release", {{"id", 1}}, 1001, 500)["ok"], true);
  EXPECT_EQ(asked, 0);
}

// A process the last reading listed still runs (a child the job left): the
// next tick reads the GPU, no sooner, and it is not handed on.
TEST_F(HandoverTest, NoReadingIsAskedAtTheEndWhileWhatItListedStillRuns) {
  int asked = 0;
  std::unique_ptr<LeaseService> s = JobAndWaiting(true, &asked);
  ASSERT_EQ(Call(s.get(), "lease.release", {{"id", 1}}, 1001, 500)["ok"], true);
  EXPECT_EQ(asked, 0);
  s->OnTick(Machine(1, {{0, testing::Process(600, 30 * kGiB, 0.9, 1001, "python", 1, 20)}}),
            clock_.SteadyNow());
  EXPECT_EQ(State(s.get(), 2), "queued");
}

}  // namespace
}  // namespace tarmac::leases
