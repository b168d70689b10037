// SPDX-License-Identifier: Apache-2.0
//
// fleet report's forms: the text within 100 columns with the verdict first,
// CSV quoting what needs it, JSON with every figure.
#include "fleet/fleet_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/text_wrap.h"
#include "testutil/http_stand_in.h"

namespace tarmac::fleet {
namespace {

FleetReport Report(ReportBy by) {
  FleetReport r;
  r.since_unix = 1796000000;
  r.until_unix = 1796000000 + 7 * 86400;
  r.by = by;
  r.currency = "USD";
  ReportRow a;
  a.key = by == ReportBy::kModel ? "NVIDIA H100 80GB HBM3, rev \"b\"" : "gpu-node-with-a-very-long-name-7";
  a.gpus = 8;
  a.busy_hours = 900;
  a.idle_hours = 400;
  a.held_idle_hours = 40;
  a.unknown_hours = 4;
  a.energy_kwh = 1234.5;
  a.idle_cost = 1760.25;
  a.lease_hours = {{"run", 500}, {"backfill", 120}};
  r.rows = {a};
  r.total = a;
  r.total.key = "";
  r.verdict =
      "3 of 8 GPUs were idle more than 80 % of the time; 440.0h of 1340.0h GPU-hours read were idle (40.0h "
      "held idle by a process); the idle time cost USD 1760.25";
  return r;
}

TEST(FleetReportTest, TextFitsAndCarriesTheFigures) {
  for (ReportBy by : {ReportBy::kNode, ReportBy::kGpu, ReportBy::kModel, ReportBy::kUser,
                      ReportBy::kNamespace, ReportBy::kPod, ReportBy::kSlurmJob}) {
    std::string text = RenderReportText(Report(by), 100);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(TextColumns(line), 100u) << line;
    EXPECT_NE(text.find("fleet report 2026-11-30 00:53 UTC to 2026-12-07 00:53 UTC"), std::string::npos)
        << text;
  }
  FleetReport warned = Report(ReportBy::kNode);
  warned.warnings = {"the store has no hourly series of tarmac's recording rules"};
  EXPECT_NE(RenderReportText(warned, 100).find("warning: the store has no hourly series"), std::string::npos);
  std::string text = RenderReportText(Report(ReportBy::kNode), 100);
  EXPECT_NE(text.find("900.0h   400.0h     40.0h     4.0h   620.0h  1234.5kWh USD 1760.25"),
            std::string::npos)
      << text;
  // A user's row: the time charged to them, its held idle by lease and by
  // processes outside leases (the columns of `tarmac report --by user`).
  FleetReport by_user = Report(ReportBy::kUser);
  by_user.rows[0].held_idle_by_lease_hours = 30;
  by_user.rows[0].held_idle_by_process_hours = 10;
  std::string users = RenderReportText(by_user, 100);
  EXPECT_NE(users.find("IDLE IN LEASE   IDLE BY PROCS"), std::string::npos) << users;
  EXPECT_NE(
      users.find("gpu-node-with-a-v      8    944.0h    900.0h          30.0h           10.0h     4.0h   "
                 "USD 1760.25"),
      std::string::npos)
      << users;
  EXPECT_EQ(ReportToJson(by_user)["rows"][0]["held_idle_by_lease_hours"], 30);
  // A holder's row: the hours it held GPUs, and of them busy, idle, unknown.
  FleetReport jobs = Report(ReportBy::kSlurmJob);
  jobs.rows[0].key = "4242";
  jobs.rows[0].lease_hours = {{"slurm", 1344}};
  std::string text_jobs = RenderReportText(jobs, 100);
  EXPECT_NE(text_jobs.find("SLURM JOB"), std::string::npos) << text_jobs;
  EXPECT_NE(text_jobs.find(
                "4242                                         8   1344.0h    900.0h    400.0h      4.0h"),
            std::string::npos)
      << text_jobs;
  jobs.rows.clear();
  EXPECT_NE(RenderReportText(jobs, 100).find("(no slurm-job held a GPU in this range)"), std::string::npos);
  bool parsed = false;
  ReportBy by = ReportBy::kNode;
  for (const char* name : {"namespace", "pod", "slurm-job"}) {
    parsed = ParseReportBy(name, &by);
    EXPECT_TRUE(parsed && IsHolderGrouping(by)) << name;
  }
  EXPECT_FALSE(ParseReportBy("job", &by));
}

TEST(FleetReportTest, CsvQuotesAndJsonCarriesEverything) {
  std::string csv = RenderReportCsv(Report(ReportBy::kModel));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "model,gpus,busy_hours,idle_hours,held_idle_hours,unknown_hours,lease_hours,energy_kwh,idle_cost,"
            "held_idle_by_lease_hours,held_idle_by_process_hours");
  EXPECT_NE(
      csv.find(
          "\"NVIDIA H100 80GB HBM3, rev \"\"b\"\"\",8,900.000,400.000,40.000,4.000,620.000,1234.500,1760.25"),
      std::string::npos)
      << csv;
  nlohmann::json j = ReportToJson(Report(ReportBy::kNode));
  EXPECT_EQ(j["by"], "node");
  EXPECT_EQ(j["rows"][0]["lease_hours"]["backfill"], 120);
  EXPECT_EQ(j["total"]["idle_cost"], 1760.25);
  EXPECT_EQ(j["currency"], "USD");
  ReportBy by = ReportBy::kNode;
  EXPECT_TRUE(ParseReportBy("user", &by));
  EXPECT_EQ(by, ReportBy::kUser);
  EXPECT_FALSE(ParseReportBy("owner", &by));
}

TEST(FleetReportTest, TheHtmlHasTheHeatmapWithHeldIdleHoursInOrangeAndEscapesNames) {
  FleetReport r = Report(ReportBy::kNode);
  r.heatmap["node<1>"] = {HourCell{1796003600, 0.9, 0.0}, HourCell{1796007200, 0.0, 0.8}};
  std::string html = RenderReportHtml(r);
  EXPECT_NE(html.find("<svg class=\"heatmap\""), std::string::npos);
  EXPECT_NE(html.find(">node&lt;1&gt;</text>"), std::string::npos) << html;
  EXPECT_NE(html.find("<rect class=\"held-idle\""), std::string::npos);
  EXPECT_NE(html.find("<g class=\"legend\""), std::string::npos);
  EXPECT_NE(html.find("90% busy, 0% held idle"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);  // Nothing to fetch.
  EXPECT_NE(html.find("<td>all</td><td>8</td><td>900.0h</td>"), std::string::npos) << html;
  FleetReport empty = Report(ReportBy::kNode);
  EXPECT_NE(RenderReportHtml(empty).find("(no node reported in this range)"), std::string::npos);
}

// A store holding one GPU twice: under two hostnames (an agent renamed, or
// two agents on one GPU), or twice under one (scraped by two jobs). The
// report refuses to add it up, naming the GPU or its node, rather than count
// it twice. The store answers the states by node and state, and each GPU's
// mostly-idle margin (the states weighted: idle 1, busy -4) by node and GPU.
struct StateSeconds {
  const char* host;
  const char* state;
  int seconds;
};
class TwiceStore : public testing::HttpStandIn {
 public:
  explicit TwiceStore(std::vector<StateSeconds> states) {
    server().Post("/api/v1/query", [states](const httplib::Request& req, httplib::Response& res) {
      std::string q = req.get_param_value("query");
      std::string items;
      auto item = [&](const std::string& labels, double value) {
        items +=
            fmt::format(R"({}{{"metric":{{{}}},"value":[0,"{}"]}})", items.empty() ? "" : ",", labels, value);
      };
      const bool is_margin = q.find(" or -4 * ") != std::string::npos;
      std::map<std::string, double> margin_of_host;
      for (const StateSeconds& s : states) {
        if (q.find("tarmac_gpu_state_seconds_total") == std::string::npos) break;
        std::string state = s.state;
        if (!is_margin) {
          item(fmt::format(R"("hostname":"{}","state":"{}")", s.host, state), s.seconds);
          continue;
        }
        double weight = state == "busy" ? -4 : state == "idle" || state == "held_idle" ? 1 : 0;
        margin_of_host[s.host] += weight * s.seconds;
      }
      for (const auto& [host, margin] : margin_of_host)
        item(fmt::format(R"("hostname":"{}","gpu":"0","uuid":"GPU-1")", host), margin);
      res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[)" + items + "]}}",
                      "application/json");
    });
    Start();
  }
};

TEST(FleetReportTest, AGpuTheStoreHoldsTwiceIsRefusedNotCountedTwice) {
  prom::PromOptions o;
  TwiceStore two_names({{"node-a", "busy", 1800}, {"node-b", "busy", 1800}});
  o.url = two_names.Url();
  Result<FleetReport> r = ReadFleetReport(std::move(prom::PromClient::Make(o)).value().get(), 1796000000,
                                          1796003600, ReportBy::kNode);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("GPU-1 is in the store under more than one hostname (node-a, node-b)"),
            std::string::npos)
      << r.status().message();
  TwiceStore doubled({{"node-a", "busy", 7200}});
  o.url = doubled.Url();
  r = ReadFleetReport(std::move(prom::PromClient::Make(o)).value().get(), 1796000000, 1796003600,
                      ReportBy::kNode);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "node node-a is in the store with 7200 s of GPU time for its 1 GPU in a range of 3600 s"),
            std::string::npos)
      << r.status().message();
  // Once, and within the range: read (a state the report does not name
  // too); busy more than a fifth of the time, so not mostly idle.
  TwiceStore once({{"node-a", "busy", 2400}, {"node-a", "idle", 600}, {"node-a", "unknown", 600}});
  o.url = once.Url();
  r = ReadFleetReport(std::move(prom::PromClient::Make(o)).value().get(), 1796000000, 1796003600,
                      ReportBy::kNode);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().total.busy_hours, 2400.0 / 3600);
  EXPECT_EQ(r.value().total.idle_hours, 600.0 / 3600);
  EXPECT_EQ(r.value().total.unknown_hours, 600.0 / 3600);
  EXPECT_EQ(r.value().total.gpus, 1);
  EXPECT_EQ(r.value().mostly_idle_gpus, 0);
  ASSERT_EQ(r.value().rows.size(), 1u);
  EXPECT_EQ(r.value().rows[0].key, "node-a");
  EXPECT_EQ(r.value().rows[0].gpus, 1);
  // Idle (and held idle) over 80 % of the time it was known, unknown time
  // aside: mostly idle. At exactly 80 %, not.
  for (auto [idle, mostly] : {std::pair{2000, 1}, std::pair{1600, 0}}) {
    TwiceStore idle_store({{"node-a", "busy", 400},
                           {"node-a", "idle", idle - 500},
                           {"node-a", "held_idle", 500},
                           {"node-a", "unknown", 3200 - idle}});
    o.url = idle_store.Url();
    r = ReadFleetReport(std::move(prom::PromClient::Make(o)).value().get(), 1796000000, 1796003600,
                        ReportBy::kModel);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.value().mostly_idle_gpus, mostly) << idle;
    EXPECT_EQ(r.value().total.gpus, 1);
  }
}

}  // namespace
}  // namespace tarmac::fleet
