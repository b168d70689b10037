// SPDX-License-Identifier: Apache-2.0
//
// The report's pieces: they tile the range, whole hours from the hourly
// series and the edges raw; a piece too big is cut in two; the answers add
// up by label set. Against a Prometheus stand-in that refuses what is over
// its limit: the reading splits down to what it takes, refuses a partial
// answer, and says why it read raw counters.
#include "fleet/report_pieces.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "testutil/http_stand_in.h"

namespace tarmac::fleet {
namespace {

using nlohmann::json;

constexpr int64_t kHour = 3600;
const int64_t kUntil = 1796000000 - 1796000000 % kHour + 1234;  // 20 min 34 s past an hour.

int64_t Covered(const std::vector<Piece>& pieces) {
  int64_t sum = 0;
  for (const Piece& p : pieces) sum += p.seconds;
  return sum;
}

TEST(ReportPiecesTest, AWeekIsItsWholeHoursHourlyAndItsEdgesRaw) {
  int64_t since = kUntil - 7 * 86400 - 600;
  std::vector<Piece> pieces = PlanPieces(since, kUntil, true);
  ASSERT_EQ(pieces.size(), 3u);
  // Before the first whole hour, raw: the range's start to it.
  EXPECT_EQ(pieces[0], (Piece{false, 2966, kUntil - (since + 2966)}));
  EXPECT_EQ((since + pieces[0].seconds) % kHour, 0);
  // The whole hours: 167 of them, ending at the last whole hour.
  EXPECT_EQ(pieces[1], (Piece{true, 167 * kHour, 1234}));
  EXPECT_EQ(pieces[2], (Piece{false, 1234, 0}));
  EXPECT_EQ(Covered(pieces), kUntil - since);
  // Without the hourly series, or for a short range: one raw piece.
  EXPECT_EQ(PlanPieces(since, kUntil, false), (std::vector<Piece>{{false, kUntil - since, 0}}));
  EXPECT_EQ(PlanPieces(kUntil - 2 * kHour, kUntil, true), (std::vector<Piece>{{false, 2 * kHour, 0}}));
  // A range that starts and ends on whole hours has no edge.
  EXPECT_EQ(PlanPieces(kUntil - 1234 - 5 * kHour, kUntil - 1234, true),
            (std::vector<Piece>{{true, 5 * kHour, 0}}));
}

TEST(ReportPiecesTest, APieceSplitsInTwoThatTileItHourlyAtAWholeHour) {
  Piece first, second;
  ASSERT_TRUE(SplitPiece(Piece{true, 167 * kHour, 1234}, &first, &second));
  EXPECT_EQ(first, (Piece{true, 84 * kHour, 1234 + 83 * kHour}));
  EXPECT_EQ(second, (Piece{true, 83 * kHour, 1234}));
  ASSERT_TRUE(SplitPiece(Piece{false, 7 * 86400 + 1, 60}, &first, &second));
  EXPECT_EQ(first.seconds + second.seconds, 7 * 86400 + 1);
  EXPECT_EQ(first.end_offset_seconds, 60 + second.seconds);
  EXPECT_EQ(second.end_offset_seconds, 60);
  EXPECT_FALSE(SplitPiece(Piece{false, kHour, 0}, &first, &second));
  EXPECT_FALSE(SplitPiece(Piece{true, kHour, 0}, &first, &second));
}

TEST(ReportPiecesTest, EachPieceIsOneQueryOfTheCounterOrItsHourlySeries) {
  IncreaseQuery q{"tarmac_gpu_state_seconds_total", "hostname, uuid, state"};
  EXPECT_EQ(
      PieceQuery(q, Piece{false, 1834, 601200}),
      "sum by (hostname, uuid, state) (increase(tarmac_gpu_state_seconds_total[1834s] offset 601200s))");
  EXPECT_EQ(PieceQuery(q, Piece{false, 1234, 0}),
            "sum by (hostname, uuid, state) (increase(tarmac_gpu_state_seconds_total[1234s]))");
  EXPECT_EQ(
      PieceQuery(q, Piece{true, 167 * kHour, 1234}),
      "sum by (hostname, uuid, state) (sum_over_time(uuid:tarmac_gpu_state_seconds:increase1h[601199s:1h] "
      "offset 1234s))");
  EXPECT_EQ(HourlySeriesOf("tarmac_gpu_user_cost_total"), "user:tarmac_gpu_user_cost:increase1h");
  EXPECT_EQ(HourlySeriesOf("tarmac_gpu_info"), "");
}

TEST(ReportPiecesTest, AnswersAddUpByLabelSet) {
  prom::Sample a{{{"uuid", "GPU-1"}, {"state", "busy"}}, 100, 0};
  prom::Sample b{{{"uuid", "GPU-1"}, {"state", "idle"}}, 5, 0};
  prom::Sample c{{{"uuid", "GPU-1"}, {"state", "busy"}}, 20, 0};
  std::vector<prom::Sample> sum = SumByLabels({{a, b}, {c}, {}});
  ASSERT_EQ(sum.size(), 2u);
  EXPECT_EQ(sum[0].Label("state"), "busy");
  EXPECT_EQ(sum[0].value, 120);
  EXPECT_EQ(sum[1].value, 5);
}

TEST(ReportPiecesTest, CoverageSaysWhyTheRawCountersAreRead) {
  EXPECT_EQ(JudgeCoverage(167, 167, 1).why, "");
  EXPECT_EQ(JudgeCoverage(167, 167, 2).why, "") << "a later version has what this one reads";
  EXPECT_NE(JudgeCoverage(167, 0, 0).why.find("no hourly series of tarmac's recording rules"),
            std::string::npos);
  EXPECT_NE(JudgeCoverage(167, 0, 0).why.find("install deploy/prometheus/tarmac.rules.yml"),
            std::string::npos);
  EXPECT_NE(JudgeCoverage(167, 167, 0).why.find("version 0, older than the version 1"), std::string::npos);
  EXPECT_NE(JudgeCoverage(167, 100, 1).why.find("cover 100 of the range's 167 whole hours"),
            std::string::npos);
}

// A Prometheus stand-in: every state query answers one sample per GPU worth
// its range's seconds, and refuses a raw range longer than `max_raw_seconds`
// as Prometheus refuses a query over --query.max-samples.
class PiecesStore : public testing::HttpStandIn {
 public:
  PiecesStore(int64_t max_raw_seconds, double rules_version, bool partial = false) {
    server().Post("/api/v1/query", [=, this](const httplib::Request& req, httplib::Response& res) {
      std::string q = req.get_param_value("query");
      asked.push_back(q);
      std::smatch m;
      auto vector = [&](const std::string& items) {
        return json{{"status", "success"},
                    {"isPartial", partial},
                    {"data", {{"resultType", "vector"}, {"result", json::parse("[" + items + "]")}}}}
            .dump();
      };
      if (q.find("count_over_time") != std::string::npos || q.find("min_over_time") != std::string::npos) {
        // The version series at every hour asked, or none.
        std::regex_search(q, m, std::regex(R"(\[(\d+)s:1h\])"));
        int64_t hours = (std::stoll(m[1]) + 1) / kHour;
        double value = q.find("count") != std::string::npos ? static_cast<double>(hours) : rules_version;
        res.set_content(rules_version > 0
                            ? vector(R"({"metric":{},"value":[0,")" + std::to_string(value) + "\"]}")
                            : vector(""),
                        "application/json");
        return;
      }
      std::regex_search(q, m, std::regex(R"(\[(\d+)s(:1h)?\])"));
      int64_t seconds = std::stoll(m[1]) + (m[2].matched ? 1 : 0);
      if (!m[2].matched && seconds > max_raw_seconds) {
        res.status = 422;
        res.set_content(
            R"({"status":"error","errorType":"execution","error":"query processing would load too )"
            R"(many samples into memory in query execution"})",
            "application/json");
        return;
      }
      res.set_content(vector(R"({"metric":{"uuid":"GPU-1","state":"busy"},"value":[0,")" +
                             std::to_string(seconds) + "\"]}"),
                      "application/json");
    });
    Start();
  }
  std::vector<std::string> asked;
};

std::unique_ptr<prom::PromClient> PiecesClient(const std::string& url) {
  prom::PromOptions o;
  o.url = url;
  return std::move(prom::PromClient::Make(o)).value();
}

const std::vector<IncreaseQuery> kStates = {{"tarmac_gpu_state_seconds_total", "uuid, state"}};

TEST(ReportPiecesTest, WithTheHourlySeriesAWeekIsThreeQueriesAndAddsUpToTheRange) {
  PiecesStore store(1 << 30, 1);
  int64_t since = kUntil - 7 * 86400;
  Result<Increases> read = ReadIncreases(PiecesClient(store.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read.value().read_hourly);
  EXPECT_EQ(read.value().queries_sent, 2 + 3);
  ASSERT_EQ(read.value().samples[0].size(), 1u);
  EXPECT_EQ(read.value().samples[0][0].value, 7 * 86400);
  EXPECT_TRUE(read.value().warnings.empty());
}

TEST(ReportPiecesTest, WithoutTheRulesTheRawRangeIsCutUntilTheStoreTakesItAndSaysWhy) {
  PiecesStore store(86400, 0);
  int64_t since = kUntil - 7 * 86400;
  Result<Increases> read = ReadIncreases(PiecesClient(store.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_FALSE(read.value().read_hourly);
  // 7 days in pieces of a day at most: 1 refused, 2 refused, 4 refused, 8 taken.
  EXPECT_EQ(read.value().samples[0][0].value, 7 * 86400);
  EXPECT_EQ(read.value().queries_sent, 2 + 1 + 2 + 4 + 8);
  ASSERT_EQ(read.value().warnings.size(), 1u);
  EXPECT_NE(read.value().warnings[0].find("no hourly series"), std::string::npos);
  // An older rule set: said, and the raw counters read.
  PiecesStore older(1 << 30, 0.5);
  read = ReadIncreases(PiecesClient(older.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read.value().read_hourly);
  EXPECT_NE(read.value().warnings[0].find("older than the version 1"), std::string::npos);
}

TEST(ReportPiecesTest, AStoreOverItsLimitEvenForAnHourOrAPartialAnswerIsAnError) {
  PiecesStore tiny(60, 0);
  Result<Increases> read = ReadIncreases(PiecesClient(tiny.Url()).get(), kStates, kUntil - 86400, kUntil);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(read.status().ToString().find("too many samples"), std::string::npos);
  PiecesStore partial(1 << 30, 1, true);
  read = ReadIncreases(PiecesClient(partial.Url()).get(), kStates, kUntil - 86400, kUntil);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().ToString().find("partial data"), std::string::npos) << read.status().ToString();
}

}  // namespace
}  // namespace tarmac::fleet
