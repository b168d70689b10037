// SPDX-License-Identifier: Apache-2.0
//
// A hostile or broken Prometheus against `tarmac fleet` and the agent's
// fleet routes: answers without end, a byte at a time, nested a hundred
// thousand deep, and label values that hold terminal escapes. Every answer
// is read through the one bounded client (http/bounded_fetch.h): each of
// these ends with an error that names the limit hit, and no label reaches
// the terminal raw (common/terminal_text.h).
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "testutil/agent_fixture.h"
#include "testutil/http_stand_in.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

std::string Vector(const std::string& items) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)" + items + "]}}";
}

// A Prometheus stand-in answering every query with `handler`.
class HostileServer : public HttpStandIn {
 public:
  explicit HostileServer(httplib::Server::Handler handler) {
    for (const char* path : {"/api/v1/query", "/api/v1/query_range", "/api/v1/series"})
      server().Post(path, handler);
    Start();
  }
};

// A body that never ends: 64 KiB of a JSON string's inside, again and again.
void Endless(const httplib::Request&, httplib::Response& res) {
  res.set_chunked_content_provider("application/json", [](size_t offset, httplib::DataSink& sink) {
    static const std::string kChunk(64 * 1024, 'x');
    if (offset == 0) sink.write("{\"status\":\"success\",\"data\":\"", 28);
    return sink.write(kChunk.data(), kChunk.size());
  });
}

// One byte every 100 ms, for ever: each read is quick, the answer never
// complete.
void Trickle(const httplib::Request&, httplib::Response& res) {
  res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return sink.write(" ", 1);
  });
}

// 100,000 nested arrays in 200 KB: valid JSON, and no Prometheus answer.
void Deep(const httplib::Request&, httplib::Response& res) {
  res.set_content(std::string(100000, '[') + std::string(100000, ']'), "application/json");
}

class HostilePrometheusTest : public AgentFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 1\n"); }

  // `tarmac fleet ARGS` against `url`, its address space capped at 4 GiB:
  // a client that read an endless answer whole dies of it instead of
  // naming the limit.
  RunResult Fleet(const std::string& url, std::vector<std::string> args,
                  const std::string& config_text = "") {
    std::string line = "ulimit -v 4194304; exec '" + BinDir() + "/tarmac' fleet";
    for (const std::string& a : args) line += " '" + a + "'";
    line += " --prometheus " + url + " --config " + dir_.Write("fleet.toml", "[fleet]\n" + config_text);
    return RunCommand({"timeout", "60", "sh", "-c", line}, Env());
  }
};

TEST_F(HostilePrometheusTest, RegressionAnEndlessAnswerEndsAtTheSizeLimitNamingIt) {
  HostileServer prometheus(Endless);
  // A reading asks several questions at once: one answer ends at its own
  // limit, or all of them at their shared one (twice that).
  auto names_a_limit = [](const std::string& err, const std::string& one, const std::string& shared) {
    return err.find("the answer is over " + one + " (the limit on one answer)") != std::string::npos ||
           err.find("the answers read at once are over " + shared + " (their shared limit)") !=
               std::string::npos;
  };
  RunResult r = Fleet(prometheus.Url(), {"status"}, "max_answer_size = \"4MiB\"\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(names_a_limit(r.err, "4 MiB", "8 MiB")) << r.err;
  // The default limit (64 MiB) holds as well, within the capped memory.
  r = Fleet(prometheus.Url(), {"report", "--since", "1h"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(names_a_limit(r.err, "64 MiB", "128 MiB")) << r.err;
}

TEST_F(HostilePrometheusTest, RegressionAnAnswerTrickledAByteAtATimeEndsAtTheTimeout) {
  HostileServer prometheus(Trickle);
  RunResult r = Fleet(prometheus.Url(), {"status", "--timeout", "1s"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no complete answer within 1000 ms"), std::string::npos) << r.err;
}

TEST_F(HostilePrometheusTest, RegressionJsonNestedAHundredThousandDeepIsRefused) {
  HostileServer prometheus(Deep);
  RunResult r = Fleet(prometheus.Url(), {"status"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nests JSON over 64 levels deep"), std::string::npos) << r.err;
}

TEST_F(HostilePrometheusTest, LabelValuesReachNoTerminalRawInAnyFleetView) {
  const std::string hostile = "n1\033]0;pwned\a\033[2J\xc2\x9b\u202e";
  HostileServer prometheus([&](const httplib::Request& req, httplib::Response& res) {
    std::string q = req.get_param_value("query");
    std::string labels =
        json{
            {"instance", "n1:9477"},      {"hostname", hostile},  {"gpu", "0"},    {"uuid", "GPU-" + hostile},
            {"model", "H100 " + hostile}, {"namespace", hostile}, {"pod", hostile}}
            .dump();
    std::string answer = Vector("");
    if (req.path == "/api/v1/series") answer = R"({"status":"success","data":[]})";
    if (q == "time()") answer = R"({"status":"success","data":{"resultType":"scalar","result":[1,"1"]}})";
    // The GPU list, the idle mark and spell that name `fleet idle`'s GPUs, and the
    // counts `--by node` reads (the agents' own, else the store's): each
    // carries the hostile names.
    if (q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_info)" ||
        q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_idle == 1)" ||
        q == "max by (instance, hostname, gpu, uuid, model) (tarmac_gpu_idle_for_seconds > 0)" ||
        q.rfind("count by (instance, hostname)", 0) == 0)
      answer = Vector(R"({"metric":)" + labels + R"(,"value":[1,"1"]})");
    if (q == "max by (instance, hostname, which) (tarmac_node_gpus)") {
      answer = Vector(R"({"metric":{"instance":"n1:9477","which":"all","hostname":)" + json(hostile).dump() +
                      R"(},"value":[1,"1"]})");
    }
    if (q == "up") answer = Vector(R"({"metric":{"instance":"n1:9477","job":"tarmac"},"value":[1,"1"]})");
    if (q.find("tarmac_gpu_pod_allocated") != std::string::npos) {
      answer = Vector(R"({"metric":)" + labels + R"(,"value":[1,"1"]})");
    }
    res.set_content(answer, "application/json");
  });
  for (std::vector<std::string> view :
       {std::vector<std::string>{"status"}, {"status", "--by", "node"}, {"idle"}, {"pick"}}) {
    RunResult r = Fleet(prometheus.Url(), view);
    // The one GPU is a pod's: pick finds none free and says which node came
    // closest, by its hostile name.
    EXPECT_EQ(r.exit_code, view[0] == "pick" ? 1 : 0) << view[0] << ": " << r.err;
    for (const std::string& text : {r.out, r.err}) {
      EXPECT_EQ(text.find('\033'), std::string::npos) << view[0] << ":\n" << text;
      EXPECT_EQ(text.find('\a'), std::string::npos) << view[0] << ":\n" << text;
      EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << view[0] << ":\n" << text;
      EXPECT_EQ(text.find("\u202e"), std::string::npos) << view[0] << ":\n" << text;
    }
    EXPECT_NE((r.out + r.err).find("n1\\e]0;pwned\\a"), std::string::npos) << view[0] << ":\n"
                                                                           << r.out << r.err;
  }
  // JSON keeps the label as it came.
  RunResult j = Fleet(prometheus.Url(), {"status", "--json"});
  json fleet = json::parse(j.out, nullptr, false);
  ASSERT_FALSE(fleet.is_discarded()) << j.out << j.err;
  EXPECT_EQ(fleet["nodes"][0]["name"], hostile);
  RunResult by_node = Fleet(prometheus.Url(), {"status", "--by", "node", "--json"});
  json nodes = json::parse(by_node.out, nullptr, false);
  ASSERT_FALSE(nodes.is_discarded()) << by_node.out << by_node.err;
  EXPECT_EQ(nodes["nodes"][0]["name"], hostile);
}

// A report's answers read a long range of every node: they have their own
// timeout ([fleet] report_timeout), and --timeout sets it as it sets the
// others'.
TEST_F(HostilePrometheusTest, AReportsAnswersHaveTheirOwnTimeoutWhichTimeoutSets) {
  HostileServer prometheus(Trickle);
  const std::string config = "timeout = \"30s\"\nreport_timeout = \"1s\"\n";
  RunResult own = Fleet(prometheus.Url(), {"report", "--since", "1h"}, config);
  EXPECT_NE(own.exit_code, 0);
  EXPECT_NE(own.err.find("no complete answer within 1000 ms"), std::string::npos) << own.err;
  RunResult set = Fleet(prometheus.Url(), {"report", "--since", "1h", "--timeout", "2s"}, config);
  EXPECT_NE(set.exit_code, 0);
  EXPECT_NE(set.err.find("no complete answer within 2000 ms"), std::string::npos) << set.err;
}

TEST_F(HostilePrometheusTest, RegressionTheConsolesFleetRoutesAnswerWithinTheTimeoutWhateverTheServerDoes) {
  HostileServer trickle(Trickle);
  HostileServer endless(Endless);
  for (auto [server, status, words] :
       {std::tuple{&trickle, 504, "no complete"}, std::tuple{&endless, 502, "limit"}}) {
    std::string config = dir_.Write("agent.toml", "[fleet]\nprometheus_url = \"" + server->Url() +
                                                      "\"\ntimeout = \"1s\"\nmax_answer_size = \"4MiB\"\n");
    Child* agent = StartAgent({"--config", config});
    for (const char* route : {"/api/v1/fleet", "/api/v1/fleet/idle", "/api/v1/fleet/report?since=1h"}) {
      std::string answer = HttpGet(route);
      EXPECT_EQ(answer.rfind("HTTP/1.1 " + std::to_string(status), 0), 0u) << route << ":\n"
                                                                           << answer.substr(0, 300);
      EXPECT_NE(answer.find(words), std::string::npos) << route << ":\n" << answer.substr(0, 300);
    }
    agent->KillAndWait(SIGTERM);
  }
}

}  // namespace
}  // namespace tarmac::testing
