// SPDX-License-Identifier: Apache-2.0
//
// The fleet as ReadFleet reads it from a Prometheus (a stand-in answering
// the queries it asks): a GPU the kubelet allocated to a pod carries the
// pod, in the view, the JSON and the holder column; the spells going on now
// are asked only where they are set, and read 0 elsewhere on the nodes that
// export them.
#include "fleet/fleet_read.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "fleet/fleet_render.h"

namespace tarmac::fleet {
namespace {

std::string Vector(const std::string& items) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)" + items + "]}}";
}

// Serves `answer(query)` on /api/v1/query until destroyed; keeps the
// queries asked.
class StandIn {
 public:
  // `series`: the label sets /api/v1/series lists (a JSON array's items);
  // with `series_body`, that body with HTTP status `series_status` instead.
  explicit StandIn(std::function<std::string(const std::string&)> answer, std::string series = "",
                   int series_status = 200, std::string series_body = "") {
    server_.Post("/api/v1/series", [this, series, series_status, series_body](const httplib::Request& req,
                                                                              httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        series_asked_.push_back(req.get_param_value("match[]") + " " + req.get_param_value("start") + " " +
                                req.get_param_value("end"));
      }
      res.status = series_status;
      res.set_content(series_body.empty() ? R"({"status":"success","data":[)" + series + "]}" : series_body,
                      "application/json");
    });
    server_.Post("/api/v1/query", [this, answer](const httplib::Request& req, httplib::Response& res) {
      std::string q = req.get_param_value("query");
      {
        std::lock_guard<std::mutex> lock(mu_);
        asked_.insert(q);
      }
      res.set_content(
          q == "time()" ? R"({"status":"success","data":{"resultType":"scalar","result":[100000,"100000"]}})"
                        : answer(q),
          "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~StandIn() {
    server_.stop();
    serving_.join();
  }
  std::unique_ptr<prom::PromClient> Client() {
    prom::PromOptions options;
    options.url = "http://127.0.0.1:" + std::to_string(port_);
    return std::move(prom::PromClient::Make(options)).value();
  }
  bool WasAsked(const std::string& part) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& q : asked_) {
      if (q.find(part) != std::string::npos) return true;
    }
    return false;
  }
  std::vector<std::string> SeriesAsked() {
    std::lock_guard<std::mutex> lock(mu_);
    return series_asked_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread serving_;
  std::mutex mu_;
  std::set<std::string> asked_;
  std::vector<std::string> series_asked_;
};

// The view `parts` reads from `prometheus` (which must give one).
FleetView ReadFromStandIn(StandIn* prometheus, const ReadParts& parts) {
  std::unique_ptr<prom::PromClient> client = prometheus->Client();
  Result<FleetView> view = ReadFleet(client.get(), parts);
  EXPECT_TRUE(view.ok()) << view.status().message();
  return view.ok() ? std::move(view).value() : FleetView();
}

TEST(FleetReadTest, AGpuAllocatedToAPodCarriesThePod) {
  StandIn prometheus([](const std::string& q) {
    if (q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_info)") {
      return Vector(
          R"({"metric":{"instance":"n1:9477","hostname":"n1","gpu":"0","uuid":"GPU-1","model":"H100"},"value":[1,"1"]},
                      {"metric":{"instance":"n1:9477","hostname":"n1","gpu":"1","uuid":"GPU-2","model":"H100"},"value":[1,"1"]})");
    }
    if (q == "up") return Vector(R"({"metric":{"instance":"n1:9477","job":"tarmac"},"value":[1,"1"]})");
    if (q.find("tarmac_gpu_pod_allocated") != std::string::npos) {
      return Vector(
          R"({"metric":{"instance":"n1:9477","gpu":"1","namespace":"ml","pod":"train-0"},"value":[1,"1"]})");
    }
    return Vector("");
  });
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<FleetView> view = ReadFleet(client.get());
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ(view.value().nodes.size(), 1u);
  ASSERT_EQ(view.value().nodes[0].gpus.size(), 2u);
  EXPECT_EQ(view.value().nodes[0].gpus[0].pod, "");
  EXPECT_EQ(view.value().nodes[0].gpus[1].pod, "ml/train-0");
  EXPECT_EQ(HolderText(view.value().nodes[0].gpus[1]), "pod ml/train-0");
  EXPECT_EQ(HolderText(view.value().nodes[0].gpus[0]), "-");
}

// Two nodes: n1 exports the spells (GPU 0 idle for 2 minutes, GPU 1 not
// idle), n2 an agent without them.
std::string TwoNodes(const std::string& q) {
  if (q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_info)") {
    return Vector(
        R"({"metric":{"instance":"n1:9477","hostname":"n1","gpu":"0","uuid":"GPU-1","model":"H100"},"value":[1,"1"]},
                     {"metric":{"instance":"n1:9477","hostname":"n1","gpu":"1","uuid":"GPU-2","model":"H100"},"value":[1,"1"]},
                     {"metric":{"instance":"n2:9477","hostname":"n2","gpu":"0","uuid":"GPU-3","model":"H100"},"value":[1,"1"]})");
  }
  if (q.find("(tarmac_gpu_utilization_ratio)") != std::string::npos) {
    return Vector(R"({"metric":{"instance":"n1:9477","gpu":"0"},"value":[1,"0"]},
                     {"metric":{"instance":"n1:9477","gpu":"1"},"value":[1,"0.9"]},
                     {"metric":{"instance":"n2:9477","gpu":"0"},"value":[1,"0.5"]})");
  }
  if (q.find("tarmac_gpu_idle_for_seconds > 0") != std::string::npos) {
    return Vector(R"({"metric":{"instance":"n1:9477","gpu":"0"},"value":[1,"120"]})");
  }
  if (q.find("tarmac_gpu_idle_for_cost") != std::string::npos) {
    return Vector(R"({"metric":{"instance":"n1:9477","gpu":"0","currency":"USD"},"value":[1,"0.5"]},
                     {"metric":{"instance":"n1:9477","gpu":"1","currency":"USD"},"value":[1,"0"]})");
  }
  if (q.find("tarmac_gpu_idle == 1") != std::string::npos) {
    return Vector(R"({"metric":{"instance":"n1:9477","gpu":"0"},"value":[1,"1"]})");
  }
  return Vector("");
}

TEST(FleetReadTest, SpellsAreZeroWhereTheNodeExportsThemAndUnknownElsewhere) {
  StandIn prometheus(TwoNodes);
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<FleetView> view = ReadFleet(client.get());
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ(view.value().nodes.size(), 2u);
  const FleetNode& n1 = view.value().nodes[0];
  const FleetNode& n2 = view.value().nodes[1];
  ASSERT_EQ(n1.gpus.size(), 2u);
  ASSERT_EQ(n2.gpus.size(), 1u);
  EXPECT_TRUE(n1.gpus[0].is_idle);
  EXPECT_EQ(n1.gpus[0].idle_for_seconds, 120);
  EXPECT_EQ(n1.gpus[0].idle_for_cost, 0.5);
  EXPECT_FALSE(n1.gpus[1].is_idle);
  EXPECT_EQ(n1.gpus[1].idle_for_seconds, 0);
  EXPECT_EQ(n1.gpus[1].held_idle_for_seconds, 0);
  EXPECT_EQ(n1.gpus[1].idle_for_cost, 0);
  EXPECT_EQ(n1.gpus[1].currency, "USD");
  EXPECT_FALSE(n2.gpus[0].idle_for_seconds.has_value());
  EXPECT_FALSE(n2.gpus[0].idle_for_cost.has_value());
  // Status asks no minute of samples; pick does.
  EXPECT_FALSE(prometheus.WasAsked("avg_over_time"));
  EXPECT_FALSE(n1.gpus[1].recent_utilization_ratio.has_value());
}

TEST(FleetReadTest, PickReadsTheLastMinutesUtilization) {
  StandIn prometheus([](const std::string& q) {
    if (q.find("avg_over_time") != std::string::npos) {
      return Vector(R"({"metric":{"instance":"n1:9477","gpu":"1"},"value":[1,"0.25"]})");
    }
    return TwoNodes(q);
  });
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<FleetView> view = ReadFleet(client.get(), ReadParts{true});
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_TRUE(prometheus.WasAsked("avg_over_time"));
  EXPECT_EQ(view.value().nodes[0].gpus[1].recent_utilization_ratio, 0.25);
}

// Answers are folded in as they come: readings that arrive before the GPU
// list land on their GPUs all the same, and a reading of a GPU the list
// does not name is dropped.
TEST(FleetReadTest, ReadingsThatComeBeforeTheGpuListLandOnTheirGpus) {
  StandIn prometheus([](const std::string& q) {
    if (q.find("tarmac_gpu_info") != std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // Every reading is in first.
    }
    if (q == "max by (instance, gpu) (tarmac_gpu_temperature_celsius)") {
      return Vector(R"({"metric":{"instance":"n1:9477","gpu":"1"},"value":[1,"61"]},
                       {"metric":{"instance":"n1:9477","gpu":"7"},"value":[1,"99"]})");
    }
    return TwoNodes(q);
  });
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<FleetView> view = ReadFleet(client.get());
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_EQ(view.value().nodes.size(), 2u);
  const FleetNode& n1 = view.value().nodes[0];
  ASSERT_EQ(n1.gpus.size(), 2u);
  EXPECT_EQ(n1.gpus[1].temperature_celsius, 61);
  EXPECT_FALSE(n1.gpus[0].temperature_celsius.has_value());
  EXPECT_TRUE(n1.gpus[0].is_idle);
  EXPECT_EQ(n1.gpus[0].idle_for_seconds, 120);
}

TEST(FleetReadTest, IdleReadsOnlyWhatItShows) {
  StandIn prometheus(TwoNodes);
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  ReadParts parts;
  parts.idle_only = true;
  Result<FleetView> view = ReadFleet(client.get(), parts);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_power_watts"));
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_utilization_ratio"));
  // No idle GPU has processes: no memory is asked.
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_memory_used_bytes"));
  EXPECT_FALSE(prometheus.WasAsked("tarmac_process_sm_utilization_ratio"));
  const FleetGpu& g = view.value().nodes[0].gpus[0];
  EXPECT_TRUE(g.is_idle);
  EXPECT_EQ(g.idle_for_seconds, 120);
  EXPECT_EQ(g.idle_for_cost, 0.5);
  EXPECT_FALSE(g.utilization_ratio.has_value());
}

// A node seen within the day that does not answer now is listed down,
// with its GPUs and last sample read over the day for it alone: the nodes
// that answer are never read over a day (at a 15 s scrape a large fleet's
// day of samples is past the store's limit). Its scrape target, hostile,
// reaches the query only as an escaped literal.
TEST(FleetReadTest, ADownNodeIsReadOverTheDayAloneItsNameQuoted) {
  const std::string down = R"(n2"}) or vector(1) or x{a=~".*:9477)";
  const std::string down_json = R"(n2\"}) or vector(1) or x{a=~\".*:9477)";
  StandIn prometheus(
      [&](const std::string& q) {
        if (q.find("last_over_time(tarmac_gpu_info{instance=~") == 0 ||
            q.find("max by (instance, hostname, gpu, uuid, model) (last_over_time(tarmac_gpu_info{") == 0) {
          return Vector(R"({"metric":{"instance":")" + down_json +
                        R"(","hostname":"n2","gpu":"0","uuid":"GPU-9","model":"A100"},"value":[1,"1"]})");
        }
        if (q.find("last_over_time(tarmac_last_sample_timestamp_seconds{") == 0) {
          return Vector(R"({"metric":{"instance":")" + down_json + R"("},"value":[1,"99000"]})");
        }
        if (q == "tarmac_last_sample_timestamp_seconds") {
          return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"99990"]})");
        }
        if (q == "up") return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"1"]})");
        return TwoNodes(q);
      },
      R"({"__name__":"tarmac_last_sample_timestamp_seconds","instance":"n1:9477"},
         {"__name__":"tarmac_last_sample_timestamp_seconds","instance":")" +
          down_json + R"("})");
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<FleetView> view = ReadFleet(client.get());
  ASSERT_TRUE(view.ok()) << view.status().message();
  // The day before the store's now, of the node-level family.
  EXPECT_EQ(prometheus.SeriesAsked(),
            std::vector<std::string>{"tarmac_last_sample_timestamp_seconds 13600.000 100000.000"});
  // The quote and braces of the name stay inside the string; its dots and
  // parentheses match only themselves.
  std::string matcher = R"({instance=~"n2\\\"\\}\\)\\ or\\ vector\\(1\\))";
  EXPECT_TRUE(prometheus.WasAsked(
      "max by (instance, hostname, gpu, uuid, model) (last_over_time(tarmac_gpu_info" + matcher))
      << matcher;
  EXPECT_TRUE(prometheus.WasAsked("last_over_time(tarmac_last_sample_timestamp_seconds" + matcher));
  EXPECT_FALSE(prometheus.WasAsked("n1:9477"));  // The live nodes are never read over the day.
  ASSERT_EQ(view.value().nodes.size(), 3u);
  const FleetNode* n2 = nullptr;
  for (const FleetNode& n : view.value().nodes) {
    if (n.instance == down) n2 = &n;
  }
  ASSERT_NE(n2, nullptr);
  EXPECT_FALSE(n2->is_up);
  EXPECT_EQ(n2->last_seen_unix, 99000);
  ASSERT_EQ(n2->gpus.size(), 1u);
  EXPECT_EQ(n2->gpus[0].uuid, "GPU-9");
  EXPECT_EQ(view.value().nodes[0].last_seen_unix, 99990);  // n1, from the instant query.
}

// A store that will not list a day's nodes (over its series limit) still
// gives the nodes that answer, and the view says the down ones are left
// out and which limit to raise; the nodes are never read over the day.
TEST(FleetReadTest, AStoreThatWillNotListTheDaysNodesStillGivesTheLiveOnesAndSaysSo) {
  StandIn prometheus(
      TwoNodes, "", 422,
      R"({"status":"error","errorType":"422","error":"cannot find metric names: the number of )"
      R"(matching timeseries exceeds 30000; see https://docs.victoriametrics.com/#resource-usage-limits"})");
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<FleetView> view = ReadFleet(client.get());
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view.value().nodes.size(), 2u);
  ASSERT_EQ(view.value().warnings.size(), 1u);
  EXPECT_NE(view.value().warnings[0].find("down nodes are not listed"), std::string::npos);
  EXPECT_NE(view.value().warnings[0].find("exceeds 30000"), std::string::npos) << view.value().warnings[0];
  EXPECT_NE(view.value().warnings[0].find("-search.maxSeries"), std::string::npos);
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_info{"));
}

// What a stand-in store answers to each query.
using IdleStore = std::function<std::string(const std::string&)>;

// The last samples of nodes `instances` (the tarmac nodes that answer now),
// or another answer of theirs, all `value`.
std::string SampledNow(const std::vector<std::string>& instances, const std::string& value = "99990") {
  std::string items;
  for (const std::string& i : instances)
    items += (items.empty() ? "" : ",") +
             fmt::format(R"({{"metric":{{"instance":"{}"}},"value":[1,"{}"]}})", i, value);
  return Vector(items);
}

// --by node: agents that count their own GPUs (tarmac_node_*) are read from
// their counts alone: no GPU's series of any family is asked.
TEST(FleetReadTest, ByNodeAgentsThatCountTheirGpusAreReadFromTheirCountsAlone) {
  StandIn prometheus([](const std::string& q) {
    if (q == "tarmac_last_sample_timestamp_seconds") return SampledNow({"n1:9477", "n2:9477"});
    if (q == "up") return SampledNow({"n1:9477", "n2:9477"}, "1");
    if (q == "max by (instance, hostname, which) (tarmac_node_gpus)") {
      std::string items;
      for (const auto& [node, counts] : std::vector<std::pair<std::string, std::vector<int>>>{
               {"n1", {8, 3, 1, 1, 2, 0}}, {"n2", {4, 0, 0, 0, 0, 1}}}) {
        const char* which[] = {"all", "idle", "held_idle", "lost", "degraded", "drain"};
        for (int i = 0; i < 6; ++i) {
          items += (items.empty() ? "" : ",") +
                   fmt::format(R"({{"metric":{{"instance":"{0}:9477","hostname":"{0}","which":"{1}"}},)"
                               R"("value":[1,"{2}"]}})",
                               node, which[i], counts[i]);
        }
      }
      return Vector(items);
    }
    if (q == "max by (instance) (tarmac_node_gpus_leased)") {
      return Vector(R"({"metric":{"instance":"n2:9477"},"value":[1,"3"]})");
    }
    if (q == "max by (instance) (tarmac_node_idle_holders)") {
      return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"2"]},
                       {"metric":{"instance":"n2:9477"},"value":[1,"0"]})");
    }
    if (q == "max by (instance) (tarmac_node_utilization_ratio)") {
      return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"0.25"]})");
    }
    return Vector("");
  });
  ReadParts parts;
  parts.by_node = true;
  FleetView view = ReadFromStandIn(&prometheus, parts);
  ASSERT_EQ(view.nodes.size(), 2u);
  ASSERT_TRUE(view.nodes[0].counts.has_value());
  ASSERT_TRUE(view.nodes[1].counts.has_value());
  const NodeCounts& n1 = *view.nodes[0].counts;
  const NodeCounts& n2 = *view.nodes[1].counts;
  EXPECT_EQ(view.nodes[0].name, "n1");
  EXPECT_EQ(std::make_tuple(n1.gpus, n1.idle, n1.held_idle, n1.lost, n1.degraded, n1.drain, n1.leased,
                            n1.idle_holders),
            std::make_tuple(8, 3, 1, 1, 2, 0, 0, 2));
  EXPECT_EQ(n1.utilization_ratio, 0.25);
  EXPECT_EQ(std::make_tuple(n2.gpus, n2.idle, n2.drain, n2.leased), std::make_tuple(4, 0, 1, 3));
  EXPECT_FALSE(n2.utilization_ratio);
  EXPECT_EQ(TotalsLine(Totals(view)), "3 of 12 GPUs idle; 1 held idle by 2 processes; 3 leased");
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_"));
  EXPECT_FALSE(prometheus.WasAsked("tarmac_process_"));
}

// --by node: the nodes whose agents do not count their GPUs (older agents)
// have the store count them; the idle holders counted are those of
// held-idle GPUs only, and the store's counts of a node that counts its own
// are not read over them.
TEST(FleetReadTest, ByNodeTheStoreCountsTheGpusOfAgentsThatDoNotCount) {
  StandIn prometheus([](const std::string& q) {
    if (q == "tarmac_last_sample_timestamp_seconds") return SampledNow({"n1:9477", "n2:9477", "n3:9477"});
    if (q == "max by (instance, hostname, which) (tarmac_node_gpus)") {
      return Vector(R"({"metric":{"instance":"n3:9477","hostname":"n3","which":"all"},"value":[1,"2"]},
                       {"metric":{"instance":"n3:9477","hostname":"n3","which":"idle"},"value":[1,"2"]})");
    }
    if (q.rfind("count by (instance, hostname)", 0) == 0) {
      return Vector(R"({"metric":{"instance":"n1:9477","hostname":"n1"},"value":[1,"2"]},
                       {"metric":{"instance":"n2:9477","hostname":"n2"},"value":[1,"1"]},
                       {"metric":{"instance":"n3:9477","hostname":"n3"},"value":[1,"7"]})");
    }
    if (q == "up") {
      return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"1"]},
                       {"metric":{"instance":"n2:9477"},"value":[1,"1"]},
                       {"metric":{"instance":"n3:9477"},"value":[1,"1"]})");
    }
    if (q == "count by (instance) (tarmac_gpu_idle == 1)") {
      return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"1"]},
                       {"metric":{"instance":"n3:9477"},"value":[1,"1"]})");
    }
    if (q.find("tarmac_gpu_lease == 1") != std::string::npos) {
      return Vector(R"({"metric":{"instance":"n2:9477"},"value":[1,"1"]})");
    }
    if (q == R"(count by (instance, verdict) (tarmac_gpu_health{verdict=~"drain|degraded"} == 1))") {
      return Vector(R"({"metric":{"instance":"n1:9477","verdict":"drain"},"value":[1,"1"]})");
    }
    if (q.rfind("avg by (instance)", 0) == 0) {
      return Vector(R"({"metric":{"instance":"n1:9477"},"value":[1,"0.45"]},
                       {"metric":{"instance":"n2:9477"},"value":[1,"0.5"]})");
    }
    if (q.find("tarmac_gpu_held_idle == 1") != std::string::npos) {
      return Vector(R"({"metric":{"instance":"n1:9477","uuid":"GPU-2"},"value":[1,"1"]},
                       {"metric":{"instance":"n3:9477","uuid":"GPU-9"},"value":[1,"1"]})");
    }
    if (q.find("tarmac_process_sm_utilization_ratio == 0") != std::string::npos) {
      return Vector(R"({"metric":{"instance":"n1:9477","uuid":"GPU-2"},"value":[1,"2"]},
                       {"metric":{"instance":"n1:9477","uuid":"GPU-1"},"value":[1,"1"]},
                       {"metric":{"instance":"n3:9477","uuid":"GPU-9"},"value":[1,"4"]})");
    }
    return Vector("");
  });
  ReadParts parts;
  parts.by_node = true;
  FleetView view = ReadFromStandIn(&prometheus, parts);
  ASSERT_EQ(view.nodes.size(), 3u);
  const FleetNode& n1 = view.nodes[0];
  const FleetNode& n2 = view.nodes[1];
  const FleetNode& n3 = view.nodes[2];
  EXPECT_TRUE(n1.gpus.empty());
  ASSERT_TRUE(n1.counts.has_value());
  ASSERT_TRUE(n2.counts.has_value());
  ASSERT_TRUE(n3.counts.has_value());
  EXPECT_EQ(n1.counts->gpus, 2);
  EXPECT_EQ(n1.counts->idle, 1);
  EXPECT_EQ(n1.counts->held_idle, 1);
  EXPECT_EQ(n1.counts->idle_holders, 2);  // GPU-1's holder is not on a held-idle GPU.
  EXPECT_EQ(n1.counts->drain, 1);
  EXPECT_EQ(n1.counts->leased, 0);
  EXPECT_EQ(n1.counts->utilization_ratio, 0.45);
  EXPECT_EQ(n2.counts->gpus, 1);
  EXPECT_EQ(n2.counts->leased, 1);
  EXPECT_EQ(n2.counts->idle, 0);
  // n3 counts its own: the store's counts of it are not read.
  EXPECT_EQ(std::make_tuple(n3.counts->gpus, n3.counts->idle, n3.counts->held_idle, n3.counts->idle_holders),
            std::make_tuple(2, 2, 0, 0));
  FleetTotals t = Totals(view);
  EXPECT_EQ(TotalsLine(t), "3 of 5 GPUs idle; 1 held idle by 2 processes; 1 leased");
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_temperature_celsius"));
  EXPECT_FALSE(prometheus.WasAsked("max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_info)"));

  std::string text = RenderNodesText(view, 100);
  EXPECT_NE(text.find("\nn1        2      1          1       0    45%  1 DRAIN  2 idle holders\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nn2        1      0          0       1    50%\n"), std::string::npos) << text;
  nlohmann::json j = NodesToJson(view);
  EXPECT_EQ(j["nodes"][0]["held_idle"], 1);
  EXPECT_EQ(j["nodes"][0]["drain"], 1);
  EXPECT_EQ(j["nodes"][1]["leased"], 1);
  EXPECT_EQ(j["totals"]["gpus"], 5);
}

// `fleet idle`: the spells name the idle GPUs, with their lengths; the GPU
// list, the largest answer, is not asked, nor the day's nodes (no down node
// is shown). Nodes whose agents are not known to export spells (n2: no
// spell now, and no counts of its own) have their idle GPUs named by the
// marks, asked of them alone: a mark of a node that exports spells (n1's
// GPU 0, a spell not yet begun) is not read over its spells. The memory is
// asked of the nodes whose idle GPUs have processes alone (n2; n1's
// processes are on a GPU that is not idle).
IdleStore IdleStoreOf(bool n2_exports_spells) {
  return [n2_exports_spells](const std::string& q) {
    if (q == "tarmac_last_sample_timestamp_seconds") return SampledNow({"n1:9477", "n2:9477", "n3:9477"});
    if (q == "up") return SampledNow({"n1:9477", "n2:9477", "n3:9477"}, "1");
    if (q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_idle_for_seconds > 0)") {
      return Vector(
          R"({"metric":{"instance":"n1:9477","hostname":"n1","gpu":"1","uuid":"GPU-2","model":"H100"},"value":[1,"600"]})");
    }
    if (q == "max by (instance, gpu, currency) (tarmac_gpu_idle_for_cost > 0)") {
      return Vector(R"({"metric":{"instance":"n1:9477","gpu":"1"},"value":[1,"2.5"]})");
    }
    if (q == R"(max by (instance) (tarmac_node_gpus{which="all"}))") {
      return SampledNow(n2_exports_spells ? std::vector<std::string>{"n1:9477", "n2:9477", "n3:9477"}
                                          : std::vector<std::string>{"n1:9477", "n3:9477"},
                        "2");
    }
    if (q == "count by (instance, uuid) (tarmac_process_gpu_memory_bytes)") {
      return Vector(R"({"metric":{"instance":"n2:9477","uuid":"GPU-3"},"value":[1,"2"]},
                       {"metric":{"instance":"n1:9477","uuid":"GPU-1"},"value":[1,"1"]})");
    }
    if (q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_idle == 1)") {
      return Vector(
          R"({"metric":{"instance":"n1:9477","hostname":"n1","gpu":"0","uuid":"GPU-1","model":"H100"},"value":[1,"1"]})");
    }
    if (q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_held_idle == 1)") {
      return Vector(
          R"({"metric":{"instance":"n2:9477","hostname":"n2","gpu":"0","uuid":"GPU-3","model":"A100"},"value":[1,"1"]})");
    }
    if (q.find("tarmac_gpu_memory_used_bytes") != std::string::npos) {
      return Vector(R"({"metric":{"instance":"n2:9477","gpu":"0"},"value":[1,"3e9"]},
                       {"metric":{"instance":"n1:9477","gpu":"0"},"value":[1,"7e10"]})");
    }
    return Vector("");
  };
}

TEST(FleetReadTest, IdleNamesItsGpusFromTheSpellsAndFromTheMarksOnlyWhereNoSpellIsExported) {
  StandIn prometheus(IdleStoreOf(false));
  ReadParts parts;
  parts.idle_only = true;
  FleetView view = ReadFromStandIn(&prometheus, parts);
  ASSERT_EQ(view.nodes.size(), 2u);
  const FleetNode& n1 = view.nodes[0];
  const FleetNode& n2 = view.nodes[1];
  ASSERT_EQ(n1.gpus.size(), 1u);
  EXPECT_EQ(n1.gpus[0].uuid, "GPU-2");
  EXPECT_EQ(n1.gpus[0].index, 1);
  EXPECT_TRUE(n1.gpus[0].is_idle);
  EXPECT_EQ(n1.gpus[0].idle_for_seconds, 600);
  EXPECT_EQ(n1.gpus[0].idle_for_cost, 2.5);
  EXPECT_EQ(n1.gpus[0].held_idle_for_seconds, 0);
  ASSERT_EQ(n2.gpus.size(), 1u);
  EXPECT_EQ(n2.gpus[0].model, "A100");
  EXPECT_TRUE(n2.gpus[0].is_held_idle);
  EXPECT_EQ(n2.gpus[0].memory_used_bytes, 3e9);
  EXPECT_EQ(n2.gpus[0].processes, 2);
  EXPECT_FALSE(n2.gpus[0].held_idle_for_seconds.has_value());  // Its agent exports no spells.
  EXPECT_TRUE(
      prometheus.WasAsked(R"(max by (instance, gpu) (tarmac_gpu_memory_used_bytes{instance=~"n2\\:9477"}))"));
  EXPECT_FALSE(prometheus.WasAsked("tarmac_gpu_memory_used_bytes)"));  // Never of every GPU.
  EXPECT_FALSE(prometheus.WasAsked("n1:9477"));
  EXPECT_TRUE(n1.is_up && n2.is_up);
  EXPECT_TRUE(prometheus.WasAsked("(tarmac_gpu_held_idle == 1)"));
  EXPECT_FALSE(prometheus.WasAsked("(tarmac_gpu_info)"));
  EXPECT_TRUE(prometheus.SeriesAsked().empty());
  EXPECT_TRUE(view.warnings.empty());

  // Every node exports spells: no mark is asked.
  StandIn spelled(IdleStoreOf(true));
  view = ReadFromStandIn(&spelled, parts);
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].gpus.size(), 1u);
  EXPECT_FALSE(spelled.WasAsked("tarmac_gpu_idle =="));
  EXPECT_FALSE(spelled.WasAsked("tarmac_gpu_held_idle =="));
}

// A fleet with no idle GPU is not a store without nodes: no warning.
TEST(FleetReadTest, IdleWithNoIdleGpuSaysNothingIsWrongWithTheStore) {
  StandIn prometheus([](const std::string& q) {
    if (q == "tarmac_last_sample_timestamp_seconds") {
      return Vector(R"({"metric":{"instance":"n1:9477","hostname":"n1"},"value":[1,"99999"]})");
    }
    return Vector("");
  });
  ReadParts parts;
  parts.idle_only = true;
  FleetView view = ReadFromStandIn(&prometheus, parts);
  EXPECT_TRUE(view.nodes.empty());
  EXPECT_TRUE(view.warnings.empty());
  // Nor does a store with no node at all, read for idle, go unexplained.
  StandIn empty([](const std::string&) { return Vector(""); });
  view = ReadFromStandIn(&empty, parts);
  ASSERT_EQ(view.warnings.size(), 1u);
  EXPECT_NE(view.warnings[0].find("no node reports to this store"), std::string::npos);
}

// How many nodes answer now: one count; none when the store has none.
TEST(FleetReadTest, CountNodesNowIsOneSmallQuestion) {
  StandIn prometheus([](const std::string& q) {
    if (q == "count(tarmac_last_sample_timestamp_seconds)")
      return Vector(R"({"metric":{},"value":[1,"10000"]})");
    return Vector("");
  });
  std::unique_ptr<prom::PromClient> client = prometheus.Client();
  Result<int> n = CountNodesNow(client.get());
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n.value(), 10000);
  StandIn empty([](const std::string&) { return Vector(""); });
  client = empty.Client();
  n = CountNodesNow(client.get());
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n.value(), 0);
}

}  // namespace
}  // namespace tarmac::fleet
