// SPDX-License-Identifier: Apache-2.0
//
// tarmac with the real peers: a private agent on the simulated GPUs with
// simload jobs, scraped every second by a real Prometheus (the Debian
// package) on loopback, which also evaluates the shipped recording rules.
// Everything is asserted through Prometheus' own query API: the stock
// dcgm-exporter dashboard's (Grafana 12239) queries, tarmac's own series and
// rules, and every query and template variable of the shipped Grafana
// dashboard, which may reference only metrics and labels tarmac exports.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>

#include "testutil/agent_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

// A free loopback TCP port (bound, then released for the child to take).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class PrometheusTest : public AgentFixture {
 public:
  // Starts Prometheus scraping the agent's /metrics every second, with the
  // shipped rules evaluated every second. Returns false if it never became
  // ready.
  bool StartPrometheus() {
    std::string rules = SourceDir() + "/deploy/prometheus/tarmac.rules.yml";
    std::string config = dir_.Write("prometheus.yml",
                                    "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                    "rule_files:\n  - " +
                                        rules +
                                        "\n"
                                        "scrape_configs:\n  - job_name: tarmac\n    static_configs:\n"
                                        "      - targets: ['127.0.0.1:" +
                                        std::to_string(HttpPort()) + "']\n");
    for (int attempt = 0; attempt < 3; ++attempt) {
      prometheus_port_ = FreePort();
      prometheus_ = std::make_unique<Child>(
          std::vector<std::string>{
              "prometheus", "--config.file=" + config, "--storage.tsdb.path=" + dir_.path() + "/tsdb",
              "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_), "--log.level=warn"},
          std::map<std::string, std::string>{}, dir_.path() + "/prometheus.log");
      for (int i = 0; i < 300; ++i) {
        httplib::Client client("127.0.0.1", prometheus_port_);
        httplib::Result r = client.Get("/-/ready");
        if (r && r->status == 200) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      prometheus_.reset();
    }
    return false;
  }

  // GET /api/v1/<path> with `params`; the parsed answer ("status", "data").
  json Api(const std::string& path, const httplib::Params& params) {
    httplib::Client client("127.0.0.1", prometheus_port_);
    client.set_read_timeout(10, 0);
    httplib::Result r = client.Get("/api/v1/" + path, params, httplib::Headers{});
    if (!r) return json{{"status", "no answer"}};
    return json::parse(r->body, nullptr, false);
  }

  // An instant query's result vector (empty on error: the error is
  // reported as a test failure).
  json Query(const std::string& promql) {
    httplib::Params params = {{"query", promql}};
    if (!eval_time_.empty()) params.emplace("time", eval_time_);
    json answer = Api("query", params);
    EXPECT_EQ(answer.value("status", ""), "success") << promql << "\n" << answer.dump();
    if (!answer.contains("data")) return json::array();
    return answer["data"]["result"];
  }

  // The value of the one series `promql` selects; NaN if not exactly one.
  double Value(const std::string& promql) {
    json result = Query(promql);
    if (result.size() != 1) {
      ADD_FAILURE() << promql << " gave " << result.size() << " series: " << result.dump();
      return NAN;
    }
    return std::stod(result[0]["value"][1].get<std::string>());
  }

  // Polls (bounded) until `promql` returns at least one series.
  bool WaitForSeries(const std::string& promql) {
    for (int i = 0; i < 300; ++i) {
      json answer = Api("query", {{"query", promql}});
      if (answer.value("status", "") == "success" && !answer["data"]["result"].empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // The label names of every series of metric `name` Prometheus holds.
  std::set<std::string> LabelsOf(const std::string& name) {
    std::set<std::string> labels;
    json answer = Api("series", {{"match[]", name}});
    if (!answer.contains("data")) return labels;
    for (const json& series : answer["data"]) {
      for (const auto& [key, value] : series.items()) labels.insert(key);
    }
    return labels;
  }

  void StartLab() {
    UseScenarioText(R"(
name = "prometheus-lab"
seed = 7
[[gpu]]
count = 2
[[fault]]
kind = "xid"
gpu = 1
xid = 13
at = "5s"
[[fault]]
kind = "ecc_error"
gpu = 0
type = "uncorrected"
count = 1
at = "5s"
)");
    StartLoad("0", {"--memory", "4GiB", "--util", "60", "--tensor", "50"});  // Busy, half in tensor pipes.
    StartLoad("1", {"--memory", "2GiB", "--util", "0"});  // Holds memory, computes nothing.
    std::string config = dir_.Write(
        "agent.toml",
        "[sampler]\nslow_interval = \"1s\"\n[http]\nhostname = \"node-a\"\n[report]\ngpu_hour_cost = 3.6\n");
    StartAgent({"--config", config});
    ASSERT_GT(HttpPort(), 0) << ReadLog();
    ASSERT_TRUE(StartPrometheus()) << "prometheus did not become ready";
    // Two scrapes at least, so rates and increases have points.
    ASSERT_TRUE(WaitForSeries("count_over_time(tarmac_sampler_ticks_total[1m]) >= 3"));
    ASSERT_TRUE(WaitForSeries("tarmac_gpu_xid_errors_total"));
    ASSERT_TRUE(WaitForSeries("count_over_time(tarmac_gpu_xid_errors_total{xid=\"13\"}[1m]) >= 2"));
    ASSERT_TRUE(WaitForSeries("tarmac_gpu_ecc_errors_total{kind=\"uncorrected\"} > 0"));
  }

  // From now on, evaluate every query at this instant, so that values read
  // by different queries come from the same scrape.
  void PinEvaluationTime() {
    eval_time_ = std::to_string(
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  }

  std::string eval_time_;
  int prometheus_port_ = 0;
  std::unique_ptr<Child> prometheus_;
};

TEST_F(PrometheusTest, StockDcgmDashboardQueriesAndTarmacSeriesMatchTheSimulatedGpus) {
  StartLab();
  PinEvaluationTime();
  EXPECT_EQ(Value("up{job=\"tarmac\"}"), 1);
  std::string uuid1 = AgentStatus()["gpus"][1]["uuid"];

  // Grafana 12239's panels, with $instance and $gpu set to "all", against
  // the scenario's model: power = idle 70 W + 630 W x utilization,
  // temperature = 30 C + 0.07 C/W x power.
  const std::string sel = "{instance=~\".*\", gpu=~\".*\"}";
  EXPECT_EQ(Query("DCGM_FI_DEV_GPU_TEMP" + sel).size(), 2u);
  double t0 = Value("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}");
  double t1 = Value("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"}");
  EXPECT_DOUBLE_EQ(Value("avg(DCGM_FI_DEV_GPU_TEMP" + sel + ")"), (t0 + t1) / 2);
  EXPECT_EQ(Query("DCGM_FI_DEV_POWER_USAGE" + sel).size(), 2u);
  double p0 = Value("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}");
  double p1 = Value("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"}");
  EXPECT_NEAR(Value("sum(DCGM_FI_DEV_POWER_USAGE" + sel + ")"), p0 + p1, 1e-9);
  EXPECT_NEAR(p1, 70, 1);                        // Idle board.
  EXPECT_NEAR(p0, 70 + 630 * 0.60, 630 * 0.03);  // 60 % +-2 % wobble.
  EXPECT_NEAR(t0, 30 + 0.07 * p0, 1);
  EXPECT_NEAR(t1, 30 + 0.07 * p1, 1);
  EXPECT_EQ(Value("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} * 1000000"), 1980e6);  // MHz; the H100's max clock.
  double util = Value("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"}");  // Percent: simload's 60 %, +-2 % wobble.
  EXPECT_GE(util, 58);
  EXPECT_LE(util, 62);
  EXPECT_EQ(Value("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"}"), 0);
  EXPECT_EQ(Value("DCGM_FI_DEV_FB_USED{gpu=\"0\"}"), 4096);  // MiB.
  EXPECT_EQ(Value("DCGM_FI_DEV_FB_USED{gpu=\"1\"}"), 2048);
  // Tensor-pipe activity (a 0-1 ratio), from GPM: 60 % busy, half of it in
  // tensor pipes.
  EXPECT_EQ(Query("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" + sel).size(), 2u);
  EXPECT_NEAR(Value("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"0\"}"), 0.30, 0.30 * 0.021);
  EXPECT_EQ(Value("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"1\"}"), 0);
  // The labels dcgm-exporter puts on a GPU, as the scrape stored them.
  std::set<std::string> dcgm_labels = LabelsOf("DCGM_FI_DEV_GPU_TEMP");
  for (const char* label :
       {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"}) {
    EXPECT_TRUE(dcgm_labels.count(label)) << label;
  }
  EXPECT_EQ(
      Query("DCGM_FI_DEV_GPU_TEMP{Hostname=\"node-a\",device=\"nvidia1\",UUID=\"" + uuid1 + "\"}").size(),
      1u);

  // tarmac's own series: idle and held-idle, what it costs, who holds it.
  EXPECT_EQ(Value("tarmac_gpu_utilization_ratio{gpu=\"0\"}"), util / 100);
  EXPECT_EQ(Value("tarmac_gpu_idle{gpu=\"0\"}"), 0);
  EXPECT_EQ(Value("tarmac_gpu_idle{gpu=\"1\"}"), 1);
  EXPECT_EQ(Value("tarmac_gpu_held_idle{gpu=\"1\"}"), 1);
  EXPECT_GT(Value("tarmac_gpu_idle_cost_total{gpu=\"1\",currency=\"USD\"}"), 0);
  EXPECT_EQ(Value("tarmac_gpu_memory_used_bytes{hostname=\"node-a\",gpu=\"1\"}"), 2147483648.0);
  EXPECT_EQ(Value("sum by (user) (tarmac_process_gpu_memory_bytes{gpu=\"1\"})"), 2147483648.0);
  EXPECT_EQ(Value("tarmac_gpu_xid_errors_total{gpu=\"1\",xid=\"13\"}"), 1);
  EXPECT_EQ(Value("tarmac_gpu_ecc_errors_total{gpu=\"0\",kind=\"uncorrected\",scope=\"volatile\"}"), 1);
  // The shipped recording rules, evaluated by Prometheus.
  eval_time_.clear();
  ASSERT_TRUE(WaitForSeries("hostname:tarmac_gpus_held_idle:count"));
  EXPECT_EQ(Value("hostname:tarmac_gpus_held_idle:count{hostname=\"node-a\"}"), 1);
  EXPECT_EQ(Value("tarmac:gpu_idle:ratio"), 0.5);
}

// Every expression of the shipped dashboard, with its variables set as
// Grafana would, must run, return series, and name only metrics and labels
// Prometheus holds from tarmac.
TEST_F(PrometheusTest, EveryFleetDashboardQueryRunsOnWhatTarmacExports) {
  StartLab();
  std::ifstream in(SourceDir() + "/deploy/grafana/tarmac-fleet.json");
  json dashboard = json::parse(in, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded());

  std::vector<std::pair<std::string, std::string>> queries;  // (panel title, expr or legend)
  std::vector<std::string> legends;
  std::function<void(const json&)> walk = [&](const json& panels) {
    for (const json& p : panels) {
      for (const json& t : p.value("targets", json::array())) {
        queries.emplace_back(p.value("title", ""), t.value("expr", ""));
        legends.push_back(t.value("legendFormat", ""));
      }
      if (p.contains("panels")) walk(p["panels"]);
    }
  };
  walk(dashboard["panels"]);
  ASSERT_GE(queries.size(), 20u);

  // Template variables: label_values(metric, label) must find the label.
  for (const json& v : dashboard["templating"]["list"]) {
    if (v.value("type", "") != "query") continue;
    std::string def = v.value("definition", "");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(def, m, std::regex(R"(label_values\((\w+),\s*(\w+)\))"))) << def;
    EXPECT_TRUE(LabelsOf(m[1]).count(m[2])) << def;
  }

  std::set<std::string> names;
  json name_answer = Api("label/__name__/values", {});
  for (const json& n : name_answer["data"]) names.insert(n.get<std::string>());
  ASSERT_TRUE(names.count("tarmac_gpu_info")) << name_answer.dump();
  for (auto [title, expr] : queries) {
    SCOPED_TRACE(title + ": " + expr);
    // Labels: in matchers and in grouping clauses.
    std::set<std::string> labels;
    std::regex label_ref(R"((\w+)\s*=~?\s*")");
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), label_ref); it != std::sregex_iterator();
         ++it) {
      labels.insert((*it)[1]);
    }
    std::regex grouping(R"((?:by|on|without|group_left)\s*\(([^)]*)\))");
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), grouping); it != std::sregex_iterator();
         ++it) {
      std::string list = (*it)[1];
      std::regex word(R"(\w+)");
      for (auto w = std::sregex_iterator(list.begin(), list.end(), word); w != std::sregex_iterator(); ++w) {
        labels.insert((*w)[0]);
      }
    }
    // Metric names: tarmac's and dcgm-exporter's prefixes.
    std::set<std::string> metrics;
    std::regex ident(R"([A-Za-z_][A-Za-z0-9_:]*)");
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), ident); it != std::sregex_iterator();
         ++it) {
      std::string id = (*it)[0];
      if (id.rfind("tarmac", 0) == 0 || id.rfind("DCGM_", 0) == 0) metrics.insert(id);
    }
    std::set<std::string> known_labels;
    for (const std::string& metric : metrics) {
      EXPECT_TRUE(names.count(metric)) << "metric not exported: " << metric;
      for (const std::string& l : LabelsOf(metric)) known_labels.insert(l);
    }
    for (const std::string& l : labels) EXPECT_TRUE(known_labels.count(l)) << "label not exported: " << l;

    std::string promql = std::regex_replace(expr, std::regex(R"(\$hostname)"), ".*");
    promql = std::regex_replace(promql, std::regex(R"(\$host)"), "node-a");
    promql = std::regex_replace(promql, std::regex(R"(\$__rate_interval|\$__range|\$__interval)"), "1m");
    EXPECT_FALSE(Query(promql).empty()) << promql;
  }
  // Legends may only use labels the series carry.
  std::set<std::string> all_labels;
  json label_answer = Api("labels", {});
  for (const json& l : label_answer["data"]) all_labels.insert(l.get<std::string>());
  ASSERT_TRUE(all_labels.count("hostname")) << label_answer.dump();
  for (const std::string& legend : legends) {
    std::regex ref(R"(\{\{(\w+)\}\})");
    for (auto it = std::sregex_iterator(legend.begin(), legend.end(), ref); it != std::sregex_iterator();
         ++it) {
      EXPECT_TRUE(all_labels.count((*it)[1])) << legend;
    }
  }
}

}  // namespace
}  // namespace tarmac::testing
