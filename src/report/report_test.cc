// SPDX-License-Identifier: Apache-2.0
#include "report/report.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "common/text_wrap.h"
#include "report/report_render.h"
#include "store/schema.h"
#include "store/writer.h"
#include "testutil/fake_clock.h"
#include "testutil/testutil.h"

namespace tarmac::report {
namespace {

using std::chrono::system_clock;

constexpr int64_t kT0 = 1800000000 - 1800000000 % 3600;  // An hour boundary.

// GPU 0 busy (80 %) for the whole range; GPU 1 idle, alice's process
// holding 2 GiB at 0 % SM on it for the first hour only, then backfilled for
// half an hour, the lease preempted in its last 10 s.
node::NodeView Machine(int64_t t) {
  node::NodeView f;
  f.taken_at = system_clock::from_time_t(t);
  for (int i = 0; i < 2; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.info.name = i == 0 ? "NVIDIA H100 80GB HBM3" : "Tesla T4";
    g.sample.utilization_gpu_ratio = i == 0 ? 0.8 : 0.0;
    g.sample.power_milliwatts = i == 0 ? 500000 : 50000;
    g.sample.memory_used_bytes = int64_t{2} << 30;
    if (i == 1 && t < kT0 + 3600) {
      node::ProcessView p;
      p.process.pid = 99;
      p.process.used_memory_bytes = int64_t{2} << 30;
      p.process.sm_utilization_ratio = 0.0;
      p.details = {99, true, 1000, "alice", "python", "python notebook.py", 1, 5, {}, {}};
      g.processes.push_back(p);
    }
    if (i == 1 && t >= kT0 + 3600 && t < kT0 + 5400) {
      g.lease = node::GpuLease{7, "batch", node::LeaseKind::kBackfill, t >= kT0 + 5390};
    }
    if (i == 1 && t >= kT0 + 5390) g.backfill_preemptions = 1;
    // The kubelet: GPU 0 to a training pod all along, GPU 1 to a notebook
    // for the last half hour, which it leaves idle.
    if (i == 0) g.allocated_to = node::KubernetesNames{"train-0", "ml", "trainer"};
    if (i == 1 && t >= kT0 + 5400) g.allocated_to = node::KubernetesNames{"notebook-0", "research", "lab"};
    // Slurm: GPU 0 to job 4242 of erin for the first hour; GPU 1 to job
    // 4243 for 30 s, half of a minute.
    if (i == 0 && t < kT0 + 3600) g.lease = node::GpuLease{9, "erin", node::LeaseKind::kSlurm, false, "4242"};
    if (i == 1 && t >= kT0 + 30 && t < kT0 + 60)
      g.lease = node::GpuLease{10, "erin", node::LeaseKind::kSlurm, false, "4243"};
    f.gpus.push_back(g);
  }
  return f;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions o;
    o.path = dir_.path() + "/tarmac.db";
    std::unique_ptr<store::StoreWriter> w = std::move(store::StoreWriter::Open(o, &clock_, &logger_)).value();
    for (int64_t t = kT0; t < kT0 + 2 * 3600; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
    ASSERT_TRUE(w->FoldAll().ok());
    db_ = std::move(store::OpenForReading(o.path)).value();
  }
  static void ExpectFits100Columns(const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(TextColumns(line), 100u) << line;
  }

  Report Build(GroupBy by = GroupBy::kUser) {
    ReportRequest r;
    r.since_t = kT0;
    r.until_t = kT0 + 2 * 3600;
    r.by = by;
    r.pricing.currency = "EUR";
    r.pricing.gpu_hour_cost = 4.0;
    r.pricing.gpu_hour_cost_by_model["Tesla T4"] = 0.5;
    r.with_charts = true;
    Result<Report> report = BuildReport(db_.get(), r);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.value();
  }
  testing::TempDir dir_;
  testing::FakeClock clock_{system_clock::from_time_t(kT0)};
  Logger logger_{LogLevel::kOff};
  std::unique_ptr<store::Db> db_;
};

TEST_F(ReportTest, PerGpuFiguresComeFromTheRollups) {
  Report r = Build();
  ASSERT_EQ(r.gpus.size(), 2u);
  const GpuLine& busy = r.gpus[0];
  const GpuLine& idle = r.gpus[1];
  EXPECT_NEAR(busy.covered_hours, 2.0, 0.01);
  EXPECT_NEAR(*busy.mean_utilization_ratio, 0.8, 1e-9);
  EXPECT_NEAR(*busy.duty_cycle_ratio, 1.0, 1e-9);
  EXPECT_NEAR(busy.energy_kwh, 1.0, 0.01);  // 500 W for 2 h.
  EXPECT_NEAR(idle.idle_hours, 2.0, 0.01);
  EXPECT_NEAR(idle.held_idle_hours, 1.0, 0.01);
  EXPECT_NEAR(idle.idle_cost, 2.0 * 0.5, 0.01);
  EXPECT_EQ(busy.hourly_utilization.size(), 2u);
  EXPECT_EQ(idle.utilization_histogram_minutes[0], 120);
  EXPECT_NEAR(idle.backfill_hours, 0.5, 1e-9);
  EXPECT_EQ(idle.backfill_preemptions, 1);
  EXPECT_EQ(busy.backfill_hours, 0);
  EXPECT_EQ(busy.backfill_preemptions, 0);
  EXPECT_NEAR(r.backfill_hours, 0.5, 1e-9);
  EXPECT_EQ(r.backfill_preemptions, 1);
  EXPECT_EQ(busy.utilization_histogram_minutes[8], 120);
}

// By user, each is charged the GPU time they held: alice's idle process
// outside leases, the backfill lease's user its idle half hour, and erin's
// Slurm job its busy hour and its 30 s idle (which outweigh alice's
// process on the GPU meanwhile). Nobody is charged for the second hour of
// GPU 0, busy but held by nobody.
TEST_F(ReportTest, OwnersTopHoldersAndTheVerdict) {
  Report r = Build();
  ASSERT_EQ(r.owners.size(), 3u);
  const OwnerLine& alice = r.owners[0];
  EXPECT_EQ(alice.owner, "alice");
  EXPECT_NEAR(alice.held_idle_hours, 1.0, 0.01);
  EXPECT_NEAR(alice.held_idle_by_process_hours, alice.held_idle_hours, 1e-9);
  EXPECT_NEAR(alice.gpu_hours_held, alice.held_idle_hours, 1e-9);
  EXPECT_NEAR(alice.idle_cost, 0.5, 0.01);
  const OwnerLine& batch = r.owners[1];
  EXPECT_EQ(batch.owner, "batch");
  EXPECT_NEAR(batch.held_idle_by_lease_hours, 0.5, 0.001);
  EXPECT_EQ(batch.held_idle_by_process_hours, 0);
  EXPECT_NEAR(batch.held_idle_by_lease_cost, 0.25, 0.001);  // A T4 at 0.50 an hour.
  const OwnerLine& erin = r.owners[2];
  EXPECT_EQ(erin.owner, "erin");
  EXPECT_NEAR(erin.gpu_hours_busy, 1.0, 0.001);
  EXPECT_NEAR(erin.busy_cost, 4.0, 0.01);  // An H100 at 4.00 an hour.
  EXPECT_NEAR(erin.held_idle_by_lease_hours * 3600, 30, 1);
  EXPECT_NEAR(erin.gpu_hours_held, erin.gpu_hours_busy + erin.held_idle_hours, 1e-9);
  EXPECT_NEAR(alice.held_idle_hours * 3600 + erin.held_idle_by_lease_hours * 3600, 3600, 1);
  std::string text = RenderText(r);
  EXPECT_NE(text.find("IDLE IN LEASE"), std::string::npos) << text;
  ExpectFits100Columns(text);
  EXPECT_NE(RenderJson(r).find("\"held_idle_by_lease_hours\""), std::string::npos);
  ASSERT_EQ(r.top_held_idle.size(), 1u);
  EXPECT_EQ(r.top_held_idle[0].pid, 99);
  EXPECT_EQ(r.top_held_idle[0].memory_max_mib, 2048);
  EXPECT_EQ(r.verdict,
            "1 of 2 GPUs were idle more than 80 % of the time; 100 % of allocated GPU memory sat on idle "
            "processes; "
            "idle cost EUR 1.00; backfill put 0.5 GPU-hours of idle time to work (1 preemption).");
}

TEST_F(ReportTest, ByPodAndNamespaceCountTheKubeletsAllocationsIdleOrNot) {
  Report r = Build(GroupBy::kPod);
  ASSERT_EQ(r.owners.size(), 2u);
  // Worst idle first: the notebook that never ran anything.
  EXPECT_EQ(r.owners[0].owner, "research/notebook-0");
  EXPECT_NEAR(r.owners[0].gpu_hours_held, 0.5, 0.01);
  EXPECT_NEAR(r.owners[0].gpu_hours_busy, 0.0, 0.01);
  EXPECT_NEAR(r.owners[0].held_idle_hours, 0.5, 0.01);
  EXPECT_NEAR(r.owners[0].idle_cost, 0.25, 0.01);  // A T4 at 0.50 an hour.
  EXPECT_EQ(r.owners[1].owner, "ml/train-0");
  EXPECT_NEAR(r.owners[1].gpu_hours_held, 2.0, 0.01);
  EXPECT_NEAR(r.owners[1].gpu_hours_busy, 2.0, 0.01);
  EXPECT_NEAR(r.owners[1].held_idle_hours, 0.0, 0.01);
  std::string text = RenderText(r);
  EXPECT_NE(text.find("NAMESPACE/POD"), std::string::npos) << text;
  ExpectFits100Columns(text);  // Allocation columns and costs beside the owner.
  EXPECT_NE(text.find("research/notebook-0"), std::string::npos);
  EXPECT_NE(RenderCsv(r).find("pod,gpu_hours_held"), std::string::npos);

  Report ns = Build(GroupBy::kNamespace);
  ASSERT_EQ(ns.owners.size(), 2u);
  EXPECT_EQ(ns.owners[0].owner, "research");
  EXPECT_EQ(ns.owners[1].owner, "ml");
  EXPECT_NEAR(ns.owners[1].gpu_hours_held, 2.0, 0.01);
  // The users are unchanged by the pods.
  EXPECT_EQ(Build().owners.size(), 3u);
}

TEST_F(ReportTest, BySlurmJobTheJobsGpuHoursUtilizationAndPeakMemory) {
  Report r = Build(GroupBy::kSlurmJob);
  ASSERT_EQ(r.owners.size(), 2u);
  // A job of half a minute counts for its half, not the whole minute.
  const OwnerLine& brief = r.owners[0];
  EXPECT_EQ(brief.owner, "job 4243 (erin)");
  EXPECT_NEAR(brief.gpu_hours_held * 3600, 30, 1);
  EXPECT_NEAR(brief.held_idle_hours * 3600, 30, 1);
  const OwnerLine& job = r.owners[1];
  EXPECT_EQ(job.owner, "job 4242 (erin)");
  EXPECT_NEAR(job.gpu_hours_held, 1.0, 0.01);
  EXPECT_NEAR(job.gpu_hours_busy, 1.0, 0.01);
  EXPECT_NEAR(job.held_idle_hours, 0.0, 0.01);
  ASSERT_TRUE(job.mean_utilization_ratio.has_value());
  EXPECT_NEAR(*job.mean_utilization_ratio, 0.8, 0.01);
  EXPECT_EQ(job.memory_max_mib, 2048);
  std::string text = RenderText(r);
  EXPECT_NE(text.find("SLURM JOB (USER)"), std::string::npos) << text;
  EXPECT_NE(text.find("80 %"), std::string::npos) << text;
  EXPECT_NE(text.find("2048 MiB"), std::string::npos) << text;
  EXPECT_NE(RenderCsv(r).find("slurm-job,gpu_hours_held"), std::string::npos);
  EXPECT_NE(RenderJson(r).find("\"memory_max_mib\": 2048"), std::string::npos);
}

TEST_F(ReportTest, RenderingsCarryTheSameFigures) {
  Report r = Build();
  std::string text = RenderText(r);
  EXPECT_NE(text.find(r.verdict.substr(0, 40)), std::string::npos);
  EXPECT_NE(text.find("alice"), std::string::npos);
  std::string csv = RenderCsv(Build(GroupBy::kGpu));
  EXPECT_EQ(csv.substr(0, csv.find('\n')).find("gpu,uuid,name,covered_hours"), 0u);
  EXPECT_NE(csv.find("1,GPU-1,Tesla T4,2."), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.500,1\n"), std::string::npos) << csv;  // GPU 1's backfill hours and preemptions.
  EXPECT_NE(text.find("BACKFILL"), std::string::npos) << text;
  EXPECT_NE(text.find("backfill, fleet-wide"), std::string::npos) << text;
  ExpectFits100Columns(text);  // Backfill and cost columns too.
  ExpectFits100Columns(RenderText(Build(GroupBy::kGpu)));
  std::string json = RenderJson(r);
  EXPECT_NE(json.find("\"backfill_hours\": 0.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"backfill_preemptions\": 1"), std::string::npos) << json;
  std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<svg class=\"heatmap\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"histogram\""), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);  // Self-contained: nothing to fetch.
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_NE(html.find("idle cost EUR 1.00"), std::string::npos);
  EXPECT_NE(html.find("<th>Backfill</th>"), std::string::npos);
}

// A short range reads in minutes, says where its data begins to the
// minute, and the HTML heatmap tells held-idle hours from empty ones, with a
// legend.
TEST_F(ReportTest, ShortRangesReadInMinutesAndTheHeatmapHasALegend) {
  ReportRequest request;
  request.since_t = kT0 - 3 * 3600 + 17 * 60;  // Before the data began.
  request.until_t = kT0 + 2 * 3600;
  request.by = GroupBy::kGpu;
  request.with_charts = true;
  Result<Report> r = BuildReport(db_.get(), request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r.value().data_since_t.has_value());
  EXPECT_EQ(*r.value().data_since_t, kT0);  // Its first minute, not its hour.
  std::string text = RenderText(r.value());
  EXPECT_NE(text.find("data from " + FormatTime(kT0)), std::string::npos) << text;
  EXPECT_NE(text.find("30m        1\n"), std::string::npos) << text;  // GPU 1's half hour of backfill.
  // An agent that ran ten minutes: minutes, not "0.2".
  store::StoreOptions o;
  o.path = dir_.path() + "/ten.db";
  {
    std::unique_ptr<store::StoreWriter> w = std::move(store::StoreWriter::Open(o, &clock_, &logger_)).value();
    for (int64_t t = kT0 + 1800; t < kT0 + 2400; ++t) ASSERT_TRUE(w->WriteNow(Machine(t)).ok());
    ASSERT_TRUE(w->FoldAll().ok());
  }
  std::unique_ptr<store::Db> ten_db = std::move(store::OpenForReading(o.path)).value();
  request.since_t = kT0;
  request.until_t = kT0 + 3600;
  Result<Report> ten = BuildReport(ten_db.get(), request);
  ASSERT_TRUE(ten.ok()) << ten.status().ToString();
  std::string short_text = RenderText(ten.value());
  EXPECT_NE(short_text.find("data from " + FormatTime(kT0 + 1800) + " to " + FormatTime(kT0 + 2400)),
            std::string::npos)
      << short_text;
  EXPECT_TRUE(std::regex_search(short_text, std::regex("Tesla T4 +10m "))) << short_text;
  EXPECT_EQ(short_text.find("0.2h"), std::string::npos) << short_text;
  std::string short_html = RenderHtml(ten.value());  // The same in the HTML tables.
  EXPECT_NE(short_html.find("<td class=\"text\">Tesla T4</td><td>10m</td>"), std::string::npos) << short_html;
  EXPECT_EQ(short_html.find("<td>0.2</td>"), std::string::npos) << short_html;

  std::string html = RenderHtml(Build());
  // GPU 1's first hour: alice held 2 GiB at 0 % SM all of it.
  EXPECT_NE(html.find("class=\"held-idle\""), std::string::npos) << html;
  EXPECT_NE(html.find("memory held at 0% SM 100% of the hour"), std::string::npos);
  EXPECT_NE(html.find("<g class=\"legend\""), std::string::npos);
  for (const char* label : {">0%<", ">100%<", ">held idle<", ">no data<"}) {
    EXPECT_NE(html.find(label), std::string::npos) << label;
  }
}

TEST_F(ReportTest, AnEmptyRangeIsRefused) {
  ReportRequest r;
  r.since_t = kT0;
  r.until_t = kT0;
  EXPECT_EQ(BuildReport(db_.get(), r).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tarmac::report
