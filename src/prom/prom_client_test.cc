// SPDX-License-Identifier: Apache-2.0
//
// Prometheus' answers as the client reads them: vectors, scalars, warnings,
// partial answers, and each kind of refusal with the code the CLI exits by;
// and label values quoted so that no input changes a query's shape.
#include "prom/prom_client.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "testutil/testutil.h"

namespace tarmac::prom {
namespace {

PromOptions At(const std::string& url) {
  PromOptions o;
  o.url = url;
  return o;
}

TEST(PromAnswerTest, AVectorKeepsEveryLabelAndValue) {
  Result<QueryResult> r = DecodeQueryAnswer(
      R"({"status":"success","data":{"resultType":"vector","result":[
          {"metric":{"__name__":"up","instance":"a:9477"},"value":[1796000000.5,"1"]},
          {"metric":{"instance":"b:9477"},"value":[1796000000.5,"NaN"]}]},
         "warnings":["results may be incomplete"]})",
      200, "prometheus http://p");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r.value().samples.size(), 2u);
  EXPECT_EQ(r.value().samples[0].Label("__name__"), "up");
  EXPECT_EQ(r.value().samples[0].Label("instance"), "a:9477");
  EXPECT_EQ(r.value().samples[0].Label("absent"), "");
  EXPECT_EQ(r.value().samples[0].value, 1);
  EXPECT_DOUBLE_EQ(r.value().samples[0].timestamp_seconds, 1796000000.5);
  EXPECT_TRUE(std::isnan(r.value().samples[1].value));
  EXPECT_EQ(r.value().warnings, std::vector<std::string>{"results may be incomplete"});
  EXPECT_FALSE(r.value().is_partial);
}

TEST(PromAnswerTest, AScalarIsOneSampleAndAPartialAnswerIsSaid) {
  Result<QueryResult> scalar = DecodeQueryAnswer(
      R"({"status":"success","data":{"resultType":"scalar","result":[1796000000,"1796000000"]}})", 200, "p");
  ASSERT_TRUE(scalar.ok());
  ASSERT_EQ(scalar.value().samples.size(), 1u);
  EXPECT_EQ(scalar.value().samples[0].value, 1796000000);
  Result<QueryResult> partial = DecodeQueryAnswer(
      R"({"status":"success","isPartial":true,"data":{"resultType":"vector","result":[]}})", 200, "p");
  ASSERT_TRUE(partial.ok());
  EXPECT_TRUE(partial.value().is_partial);
}

TEST(PromAnswerTest, EachRefusalHasItsCodeAndNamesTheServer) {
  struct Case {
    std::string body;
    int http;
    StatusCode code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})", 400,
       StatusCode::kInvalidArgument, "bad_data: parse error at char 3"},
      {R"({"status":"error","errorType":"execution","error":"query processing would load too many samples into memory"})",
       422, StatusCode::kResourceExhausted, "too many samples"},
      // VictoriaMetrics' words for its samples limit (1.79).
      {R"({"status":"error","errorType":"422","error":"cannot evaluate \"increase(c[1h])\": cannot select more than -search.maxSamplesPerQuery=100 samples; possible solutions: ..."})",
       422, StatusCode::kResourceExhausted, "maxSamplesPerQuery"},
      {R"({"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"})", 503,
       StatusCode::kResourceExhausted, "timed out"},
      {R"({"status":"error","errorType":"unavailable","error":"TSDB not ready"})", 503,
       StatusCode::kUnavailable, "TSDB not ready"},
      {"<html>Bad Gateway</html>", 502, StatusCode::kUnavailable, "HTTP 502"},
      {"Unauthorized", 401, StatusCode::kPermissionDenied, "credentials"},
      {"<html>hello</html>", 200, StatusCode::kCorruption, "not a Prometheus API answer"},
      {R"({"status":"success","data":{"resultType":"matrix","result":[]}})", 200,
       StatusCode::kInvalidArgument, "a matrix answer"},
      {R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})", 200,
       StatusCode::kCorruption, "without [time, value]"},
  };
  for (const Case& c : cases) {
    Result<QueryResult> r = DecodeQueryAnswer(c.body, c.http, "prometheus http://p:9090");
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), c.code) << c.body << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().rfind("prometheus http://p:9090", 0), 0u) << r.status().message();
  }
}

TEST(PromAnswerTest, ARangeAnswerKeepsEverySeriesPoints) {
  Result<RangeResult> r = DecodeRangeAnswer(
      R"({"status":"success","data":{"resultType":"matrix","result":[
          {"metric":{"hostname":"n1"},"values":[[1796000000,"1"],[1796003600,"0.5"]]}]}})",
      200, "p");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r.value().series.size(), 1u);
  EXPECT_EQ(r.value().series[0].Label("hostname"), "n1");
  EXPECT_EQ(r.value().series[0].points,
            (std::vector<std::pair<double, double>>{{1796000000, 1}, {1796003600, 0.5}}));
  EXPECT_EQ(DecodeRangeAnswer(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 200, "p")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      DecodeRangeAnswer(R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[[1]]}]}})",
                        200, "p")
          .status()
          .code(),
      StatusCode::kCorruption);
}

TEST(PromClientTest, ABadUrlOrCredentialFileIsRefusedNamingTheOption) {
  for (const char* url : {"", "ftp://x", "http://", "http://host:port", "http://a b"}) {
    Result<std::unique_ptr<PromClient>> c = PromClient::Make(At(url));
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("--prometheus"), std::string::npos);
  }
  EXPECT_TRUE(PromClient::Make(At("https://mon.example.com/prometheus/")).ok());
  PromOptions o = At("http://127.0.0.1:9090");
  o.bearer_token_file = "/nonexistent/token";
  Result<std::unique_ptr<PromClient>> c = PromClient::Make(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("--bearer-token-file /nonexistent/token"), std::string::npos);
  // Not a regular file: refused at once, never read (a FIFO would block).
  testing::TempDir dir;
  std::string fifo = dir.path() + "/token";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  o.bearer_token_file = fifo;
  EXPECT_NE(PromClient::Make(o).status().message().find("--bearer-token-file " + fifo +
                                                        ": is a FIFO, not a regular file"),
            std::string::npos);
  o.bearer_token_file = "/dev/zero";
  EXPECT_EQ(PromClient::Make(o).status().code(), StatusCode::kInvalidArgument);
  o.bearer_token_file.clear();
  o.ca_file = "/etc/hostname";
  EXPECT_NE(PromClient::Make(o).status().message().find("only for an https://"), std::string::npos);
}

TEST(PromClientTest, NothingAnswersThereIsUnavailableNamingTheUrl) {
  Result<std::unique_ptr<PromClient>> c = PromClient::Make(At("http://127.0.0.1:1"));
  ASSERT_TRUE(c.ok());
  Result<QueryResult> r = c.value()->Query("up");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("http://127.0.0.1:1"), std::string::npos);
}

// Answers query Q with one sample labelled q="Q" after `delay_ms(Q)`, and
// refuses the query "bad" as a parse error.
void ServeEchoes(httplib::Server* server, int (*delay_ms)(const std::string&)) {
  server->Post("/api/v1/query", [delay_ms](const httplib::Request& req, httplib::Response& res) {
    std::string q = req.get_param_value("query");
    if (q == "bad") {
      res.status = 400;
      res.set_content(R"({"status":"error","errorType":"bad_data","error":"parse error"})",
                      "application/json");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(q)));
    res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"q":")" + q +
                        R"("},"value":[1,"1"]}]}})",
                    "application/json");
  });
}

TEST(PromClientTest, QueriesAskedAtOnceAnswerInTheOrderAskedAndOneRefusalFailsThemAll) {
  httplib::Server server;
  ServeEchoes(&server, [](const std::string& q) { return q == "a" ? 50 : 0; });  // The first answers last.
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  Result<std::unique_ptr<PromClient>> c = PromClient::Make(At(fmt::format("http://127.0.0.1:{}", port)));
  ASSERT_TRUE(c.ok());
  Result<std::vector<QueryResult>> all = c.value()->QueryAll({"a", "b", "c"});
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all.value().size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(all.value()[i].samples.at(0).Label("q"), std::string(1, "abc"[i]));
  Result<std::vector<QueryResult>> refused = c.value()->QueryAll({"a", "bad", "c"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("parse error"), std::string::npos) << refused.status().message();
  server.stop();
  serving.join();
}

// QueryEachInTurn hands each answer over as it comes, one at a time: the
// slow one last, never two at once, each with its own index.
TEST(PromClientTest, AnswersAskedAtOnceAreHandedOverAsTheyComeOneAtATime) {
  httplib::Server server;
  ServeEchoes(&server, [](const std::string& q) { return q == "slow" ? 300 : 0; });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  Result<std::unique_ptr<PromClient>> c = PromClient::Make(At(fmt::format("http://127.0.0.1:{}", port)));
  ASSERT_TRUE(c.ok());
  const std::vector<std::string> asked = {"slow", "b", "bad", "d"};
  std::vector<size_t> order;
  std::atomic<int> inside{0};
  int most_inside = 0;
  std::vector<std::string> said(asked.size());
  c.value()->QueryEachInTurn(asked, std::nullopt, [&](size_t i, Result<QueryResult> answer) {
    most_inside = std::max(most_inside, ++inside);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // Another answer arrives meanwhile.
    order.push_back(i);
    said[i] = answer.ok() ? answer.value().samples.at(0).Label("q") : answer.status().message();
    --inside;
  });
  EXPECT_EQ(most_inside, 1);
  ASSERT_EQ(order.size(), asked.size());
  EXPECT_EQ(order.back(), 0u);  // The slow answer, taken last though asked first.
  EXPECT_EQ(said[1], "b");
  EXPECT_NE(said[2].find("parse error"), std::string::npos) << said[2];
  EXPECT_EQ(said[3], "d");
  EXPECT_EQ(said[0], "slow");
  server.stop();
  serving.join();
}

TEST(PromClientTest, SeriesListsTheLabelSetsThatExistAndARefusalSaysWhy) {
  httplib::Server server;
  std::vector<std::string> asked;
  server.Post("/api/v1/series", [&](const httplib::Request& req, httplib::Response& res) {
    for (size_t i = 0; i < req.get_param_value_count("match[]"); ++i)
      asked.push_back(req.get_param_value("match[]", i));
    res.set_content(
        R"({"status":"success","data":[{"__name__":"up","instance":"a:1"},{"__name__":"up","instance":"b:1"}]})",
        "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  Result<std::unique_ptr<PromClient>> c = PromClient::Make(At(fmt::format("http://127.0.0.1:{}", port)));
  ASSERT_TRUE(c.ok());
  auto series = c.value()->Series({"up", "tarmac_gpu_info"}, 1796000000, 1796003600);
  ASSERT_TRUE(series.ok()) << series.status().message();
  ASSERT_EQ(series.value().size(), 2u);
  EXPECT_EQ(series.value()[1].at("instance"), "b:1");
  EXPECT_EQ(asked, (std::vector<std::string>{"up", "tarmac_gpu_info"}));
  server.stop();
  serving.join();

  auto refused =
      DecodeSeriesAnswer(R"({"status":"error","errorType":"bad_data","error":"no match[] given"})", 400, "p");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("no match[] given"), std::string::npos);
  EXPECT_EQ(DecodeSeriesAnswer(R"({"status":"success","data":{}})", 200, "p").status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeSeriesAnswer("<html>", 502, "p").status().code(), StatusCode::kUnavailable);
}

TEST(PromAnswerTest, RegressionFieldsOfTheWrongTypeAreRefusedNotACrash) {
  // These threw nlohmann's type_error out of the decoder, ending tarmac fleet.
  for (const char* body : {R"({"status":1})", R"({"status":"error","error":7,"errorType":[]})",
                           R"({"status":"success","data":{"resultType":5,"result":[]}})"}) {
    Result<QueryResult> r = DecodeQueryAnswer(body, 200, "p");
    EXPECT_FALSE(r.ok()) << body;
    EXPECT_FALSE(DecodeSeriesAnswer(body, 200, "p").ok()) << body;
  }
  Result<QueryResult> partial = DecodeQueryAnswer(
      R"({"status":"success","isPartial":"yes","data":{"resultType":"vector","result":[]}})", 200, "p");
  ASSERT_TRUE(partial.ok()) << partial.status().message();
  EXPECT_FALSE(partial.value().is_partial);
}

TEST(PromQlTest, ALabelValueIsOneStringLiteralWhateverItHolds) {
  EXPECT_EQ(QuoteLabelValue("node-1"), "\"node-1\"");
  EXPECT_EQ(QuoteLabelValue("a\"} or vector(1) #"), "\"a\\\"} or vector(1) #\"");
  EXPECT_EQ(QuoteLabelValue("back\\slash\nline"), "\"back\\\\slash\\nline\"");
}

}  // namespace
}  // namespace tarmac::prom
