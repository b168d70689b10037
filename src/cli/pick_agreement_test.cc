// SPDX-License-Identifier: Apache-2.0
//
// One meaning of "free": `tarmac pick` (through the agent, which marks its
// leases on the view) and `tarmac run --no-wait` asked the same thing at
// the same instant agree, over random lab states: other users' jobs,
// invisible work, GPUs to drain and degraded ones, reservations. No grant
// ever lands on a GPU to drain, and a degraded GPU is granted only when the
// ok ones cannot serve the request.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "cli/pick.h"
#include "node/health_verdict.h"
#include "node/lease_marks.h"
#include "testutil/lease_service_fixture.h"
#include "testutil/process_views.h"

namespace tarmac::leases {
namespace {

using namespace test;  // NOLINT: the shared fixture.
using nlohmann::json;

// A random lab: each GPU idle, or running bob's job, or busy with work no
// process shows, or to drain, or degraded.
node::NodeView RandomLab(std::mt19937& rng, int gpus) {
  node::NodeView view = Machine(gpus);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_real_distribution<double> use(0, 1);
  for (int i = 0; i < gpus; ++i) {
    node::GpuView& g = view.gpus[static_cast<size_t>(i)];
    g.info.memory_total_bytes = 80 * kGiB;
    switch (kind(rng)) {
      case 0:
        g.processes.push_back(testing::Process(700 + i, 20 * kGiB, use(rng), 1002, "train"));
        break;
      case 1:
        g.sample.utilization_gpu_ratio = use(rng);
        break;
      case 2:
        g.sample.ecc.volatile_uncorrected = 1;
        break;
      case 3:
        g.info.pcie_width_max = 16;
        g.sample.pcie_width = 8;
        break;
      default:
        break;
    }
  }
  return view;
}

int FreeNow(const std::string& why) {
  std::smatch m;
  return std::regex_search(why, m, std::regex("(\\d+) free now")) ? std::stoi(m[1]) : -1;
}

TEST_F(LeaseServiceTest, PickAndRunNoWaitAgreeOnWhatIsFree) {
  std::mt19937 rng(49);
  processes_.Add(500, 1001, 10);  // Alice's client.
  processes_.Add(501, 1002, 11);  // Bob's.
  int granted_count = 0;
  int refused_count = 0;
  for (int round = 0; round < 300; ++round) {
    int gpus = std::uniform_int_distribution<int>(2, 8)(rng);
    node::NodeView view = RandomLab(rng, gpus);
    std::unique_ptr<LeaseService> s = Make(LeasePolicy(), /*with_state=*/false);
    s->OnTick(view, clock_.SteadyNow());
    int reservations = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int r = 0; r < reservations; ++r) {
      Call(s.get(), "lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"wait", false}}, 1002, 501);
    }
    node::NodeView seen = view;  // As `tarmac pick` gets it from the agent.
    node::ApplyLeaseMarks(*s->Marks(), &seen);
    int count = std::uniform_int_distribution<int>(1, gpus)(rng);
    cli::PickResult picked = cli::Pick(seen, cli::PickRequest{.count = count});
    int free = 0;
    for (const cli::PickJudgement& j : picked.gpus) free += j.is_free ? 1 : 0;

    json asked = Call(s.get(), "lease.request", {{"gpus", count}, {"kind", "reservation"}, {"wait", false}});
    SCOPED_TRACE(fmt::format("round {}: {} GPUs, {} asked, {} free to pick; {}", round, gpus, count, free,
                             asked.dump()));
    bool is_granted = asked["ok"].get<bool>() && asked["result"]["state"] == "granted";
    EXPECT_EQ(is_granted, !picked.chosen.empty());
    if (!is_granted) {
      ++refused_count;
      if (!asked["ok"].get<bool>() &&
          asked["error"]["message"].get<std::string>().find("free now") != std::string::npos) {
        EXPECT_EQ(FreeNow(asked["error"]["message"]), free);
      }
      continue;
    }
    ++granted_count;
    bool takes_degraded = false;
    for (const json& gpu : asked["result"]["lease"]["gpus"]) {
      const cli::PickJudgement& j = picked.gpus[gpu.get<size_t>()];
      EXPECT_TRUE(j.is_free) << "granted GPU " << gpu << ": " << j.why;
      node::Verdict v = node::JudgeGpu(view.gpus[gpu.get<size_t>()]).verdict;
      EXPECT_NE(v, node::Verdict::kDrain);
      takes_degraded |= v == node::Verdict::kDegraded;
    }
    int ok_free = 0;
    for (const cli::PickJudgement& j : picked.gpus)
      ok_free += j.is_free && node::JudgeGpu(*j.gpu).verdict == node::Verdict::kOk;
    if (takes_degraded) {
      EXPECT_LT(ok_free, count) << "a degraded GPU granted while enough ok ones were free";
    }
  }
  // The random labs cover both answers.
  EXPECT_GT(granted_count, 50);
  EXPECT_GT(refused_count, 50);
}

}  // namespace
}  // namespace tarmac::leases
