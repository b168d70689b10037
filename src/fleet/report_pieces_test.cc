// SPDX-License-Identifier: Apache-2.0
//
// The report's pieces: they tile the range, whole hours from the hourly
// series and the edges raw; a piece too big is cut in two; the answers add
// up by label set. Against a Prometheus stand-in that refuses what is over
// its limit: the reading splits down to what it takes, refuses a partial
// answer, and says why it read raw counters.
#include "fleet/report_pieces.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "testutil/http_stand_in.h"

namespace tarmac::fleet {
namespace {

using nlohmann::json;

constexpr int64_t kHour = 3600;
constexpr int64_t kHourMs = kHour * 1000;
const int64_t kUntil = 1796000000 - 1796000000 % kHour + 1234;  // 20 min 34 s past an hour.
const int64_t kUntilMs = kUntil * 1000;
// The rules' evaluation before it: 7 min 13.250 s past the hour.
const int64_t kEvaluationMs = (kUntil - 1234) * 1000 + 433250;

int64_t Covered(const std::vector<Piece>& pieces) {
  int64_t sum = 0;
  for (const Piece& p : pieces) sum += p.ms;
  return sum;
}

TEST(ReportPiecesTest, AWeekIsItsEvaluationHoursHourlyAndItsEdgesRaw) {
  int64_t since = kUntilMs - 7 * 86400 * 1000 - 600 * 1000;
  std::vector<Piece> pieces = PlanPieces(since, kUntilMs, kEvaluationMs);
  ASSERT_EQ(pieces.size(), 3u);
  // The hours evaluated inside the range: 167 (the range starts 200.75 s
  // after the evaluation 168 hours back), the last ending at the
  // evaluation given; before them, raw from the range's start.
  const int64_t after = kUntilMs - kEvaluationMs;
  EXPECT_EQ(pieces[1], (Piece{true, 167 * kHourMs, after}));
  EXPECT_EQ(pieces[0], (Piece{false, kHourMs - 200750, after + 167 * kHourMs}));
  EXPECT_GT(pieces[0].ms, 0);
  EXPECT_LT(pieces[0].ms, kHourMs);
  EXPECT_EQ(pieces[2], (Piece{false, after, 0}));
  EXPECT_EQ(Covered(pieces), kUntilMs - since);
  // Without an evaluation, for a short range, or for an evaluation after
  // the range: one raw piece.
  EXPECT_EQ(PlanPieces(since, kUntilMs, std::nullopt), (std::vector<Piece>{{false, kUntilMs - since, 0}}));
  EXPECT_EQ(PlanPieces(kUntilMs - 2 * kHourMs, kUntilMs, kEvaluationMs),
            (std::vector<Piece>{{false, 2 * kHourMs, 0}}));
  EXPECT_EQ(PlanPieces(since, kEvaluationMs - 1, kEvaluationMs),
            (std::vector<Piece>{{false, kEvaluationMs - 1 - since, 0}}));
  // A range from an evaluation hour's start to an evaluation has no edge.
  EXPECT_EQ(PlanPieces(kEvaluationMs - 5 * kHourMs, kEvaluationMs, kEvaluationMs),
            (std::vector<Piece>{{true, 5 * kHourMs, 0}}));
}

TEST(ReportPiecesTest, APieceSplitsInTwoThatTileItHourlyAtAnEvaluation) {
  Piece first, second;
  ASSERT_TRUE(SplitPiece(Piece{true, 167 * kHourMs, 786750}, &first, &second));
  EXPECT_EQ(first, (Piece{true, 84 * kHourMs, 786750 + 83 * kHourMs}));
  EXPECT_EQ(second, (Piece{true, 83 * kHourMs, 786750}));
  ASSERT_TRUE(SplitPiece(Piece{false, 7 * 86400 * 1000 + 1, 60}, &first, &second));
  EXPECT_EQ(first.ms + second.ms, 7 * 86400 * 1000 + 1);
  EXPECT_EQ(first.end_offset_ms, 60 + second.ms);
  EXPECT_EQ(second.end_offset_ms, 60);
  EXPECT_FALSE(SplitPiece(Piece{false, kHourMs, 0}, &first, &second));
  EXPECT_FALSE(SplitPiece(Piece{true, kHourMs, 0}, &first, &second));
}

TEST(ReportPiecesTest, EachPieceIsOneQueryOfTheCounterOrItsHourlySeries) {
  IncreaseQuery q{"tarmac_gpu_state_seconds_total", "hostname, uuid, state"};
  EXPECT_EQ(
      PieceQuery(q, Piece{false, 1834250, 601200000}),
      "sum by (hostname, uuid, state) (increase(tarmac_gpu_state_seconds_total[1834250ms] offset 601200s))");
  EXPECT_EQ(PieceQuery(q, Piece{false, 1234000, 0}),
            "sum by (hostname, uuid, state) (increase(tarmac_gpu_state_seconds_total[1234s]))");
  // The hours' samples and no other: from half an hour after the
  // evaluation before the first hour, to the last evaluation. A range
  // selector, read series by series.
  EXPECT_EQ(PieceQuery(q, Piece{true, 167 * kHourMs, 786750}),
            "sum by (hostname, uuid, state) (sum_over_time(uuid:tarmac_gpu_state_seconds:increase1h[599400s] "
            "offset 786750ms))");
  EXPECT_EQ(HourlySeriesOf("tarmac_gpu_user_cost_total"), "user:tarmac_gpu_user_cost:increase1h");
  EXPECT_EQ(HourlySeriesOf("tarmac_gpu_info"), "");
  // A roll-up per node for the hours, the counter itself at the edges.
  IncreaseQuery nodes{"tarmac_gpu_state_seconds_total",
                      "hostname, state",
                      {},
                      NodeHourlySeriesOf("tarmac_gpu_state_seconds_total")};
  EXPECT_EQ(PieceQuery(nodes, Piece{true, 167 * kHourMs, 0}),
            "sum by (hostname, state) (sum_over_time(hostname_model:tarmac_gpu_state_seconds:increase1h"
            "[599400s]))");
  EXPECT_EQ(PieceQuery(nodes, Piece{false, 1234000, 0}),
            "sum by (hostname, state) (increase(tarmac_gpu_state_seconds_total[1234s]))");
  EXPECT_EQ(NodeHourlySeriesOf("tarmac_gpu_job_seconds_total"), "") << "holders are read per GPU";
  // The margin: its series for the hours; at the edges, the states
  // weighted as the rules weigh them, every GPU kept (its other states
  // at 0).
  IncreaseQuery margin{
      "tarmac_gpu_state_seconds_total", "uuid", {}, kMostlyIdleMarginSeries, MostlyIdleMarginWeights()};
  EXPECT_EQ(PieceQuery(margin, Piece{true, 167 * kHourMs, 0}),
            "sum by (uuid) (sum_over_time(uuid:tarmac_gpu_mostly_idle_margin_seconds:increase1h[599400s]))");
  EXPECT_EQ(PieceQuery(margin, Piece{false, 1234000, 60000}),
            "sum by (uuid) (increase(tarmac_gpu_state_seconds_total{state=~\"idle|held_idle\"}[1234s] offset "
            "60s) or -4 * increase(tarmac_gpu_state_seconds_total{state=\"busy\"}[1234s] offset 60s) or 0 * "
            "increase(tarmac_gpu_state_seconds_total{state!~\"idle|held_idle|busy\"}[1234s] offset 60s))");
}

TEST(ReportPiecesTest, TheAnchorIsAnEvaluationEveryStoreHadAtTheSameTimeOfTheHour) {
  EXPECT_FALSE(ChooseAnchor(0, 0).evaluation_ms.has_value());
  EXPECT_EQ(ChooseAnchor(0, 0).why, "") << "no rules: said by the coverage";
  EXPECT_EQ(ChooseAnchor(kEvaluationMs, kEvaluationMs).evaluation_ms, kEvaluationMs);
  // One store an evaluation behind: the one both had.
  EXPECT_EQ(ChooseAnchor(kEvaluationMs, kEvaluationMs - kHourMs).evaluation_ms, kEvaluationMs - kHourMs);
  EXPECT_EQ(ChooseAnchor(kEvaluationMs, kEvaluationMs - kHourMs + 400).evaluation_ms,
            kEvaluationMs - kHourMs + 400);
  // Stores that evaluate at different minutes: no anchor, and why.
  Anchor apart = ChooseAnchor(kEvaluationMs, kEvaluationMs - 600000);
  EXPECT_FALSE(apart.evaluation_ms.has_value());
  EXPECT_NE(apart.why.find("different times of the hour (600 s apart)"), std::string::npos) << apart.why;
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

// LabelSums against a map of label sets to sums, over random answers: label
// sets met again, new in a later answer, or twice in one answer (a store
// should not, but its sums must still be right).
TEST(ReportPiecesTest, LabelSumsMatchAMapOverRandomAnswers) {
  std::mt19937 rng(5);
  const char* uuids[] = {"GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6"};
  const char* states[] = {"busy", "idle", "held_idle", "unknown"};
  for (int round = 0; round < 200; ++round) {
    LabelSums sums;
    std::map<std::map<std::string, std::string>, double> model;
    int answers = 1 + static_cast<int>(rng() % 4);
    for (int a = 0; a < answers; ++a) {
      std::vector<prom::Sample> answer;
      int n = static_cast<int>(rng() % 12);
      for (int i = 0; i < n; ++i) {
        std::string uuid = uuids[rng() % 6], state = states[rng() % 4];
        double value = static_cast<double>(rng() % 1000);
        answer.push_back(prom::Sample{{{"uuid", uuid}, {"state", state}}, value, 1});
        model[{{"state", state}, {"uuid", uuid}}] += value;
      }
      sums.Add(std::move(answer));
    }
    std::vector<prom::Sample> got = sums.Take();
    ASSERT_EQ(got.size(), model.size()) << "round " << round;
    size_t i = 0;
    for (const auto& [labels, value] : model) {
      std::map<std::string, std::string> got_labels(got[i].labels.begin(), got[i].labels.end());
      ASSERT_EQ(got_labels, labels) << "round " << round << ", in label order";
      ASSERT_EQ(got[i].value, value) << "round " << round;
      ++i;
    }
    EXPECT_TRUE(sums.Take().empty());
  }
}

TEST(ReportPiecesTest, CoverageSaysWhyTheRawCountersAreRead) {
  EXPECT_EQ(JudgeCoverage(167, 167, 167, 3).why, "");
  EXPECT_EQ(JudgeCoverage(167, 167, 167, 4).why, "") << "a later version has what this one reads";
  EXPECT_NE(JudgeCoverage(167, 0, 0, 0).why.find("no hourly series of tarmac's recording rules"),
            std::string::npos);
  EXPECT_NE(JudgeCoverage(167, 0, 0, 0).why.find("install deploy/prometheus/tarmac.rules.yml"),
            std::string::npos);
  // Version 2 had no roll-ups per node.
  EXPECT_NE(JudgeCoverage(167, 167, 167, 2).why.find("version 2, older than the version 3"),
            std::string::npos);
  EXPECT_NE(JudgeCoverage(167, 100, 167, 3).why.find("cover 100 of the range's 167 hours"),
            std::string::npos);
  // Hours held twice would be counted twice.
  EXPECT_NE(JudgeCoverage(167, 167, 174, 3)
                .why.find("174 evaluations of tarmac's recording rules for the "
                          "range's 167 hours"),
            std::string::npos);
}

// A Prometheus stand-in: the rules evaluated at kEvaluationMs and every
// hour before it, at version `rules_version` (none at 0) and for every hour
// but `missed_hours`; every state query answers one sample per GPU worth its
// range's seconds; a raw range longer than `max_raw_seconds` is refused as
// Prometheus refuses a query over --query.max-samples (only for the family
// `limited_family`, when given: a family with more series).
class PiecesStore : public testing::HttpStandIn {
 public:
  PiecesStore(int64_t max_raw_seconds, double rules_version, bool partial = false, int64_t missed_hours = 0,
              int64_t slow_raw_seconds = 1 << 30, std::string limited_family = "") {
    server().Post("/api/v1/query", [=, this](const httplib::Request& req, httplib::Response& res) {
      std::string q = req.get_param_value("query");
      auto vector = [&](const std::string& items) {
        return json{{"status", "success"},
                    {"isPartial", partial},
                    {"data", {{"resultType", "vector"}, {"result", json::parse("[" + items + "]")}}}}
            .dump();
      };
      auto one = [&](double value) {
        return rules_version > 0
                   ? vector(R"({"metric":{},"value":[0,")" + fmt::format("{:.3f}", value) + "\"]}")
                   : vector("");
      };
      std::smatch m;
      std::regex_search(q, m, std::regex(R"(\[(\d+)(ms|s)(:10s)?\])"));
      double seconds = static_cast<double>(std::stoll(m[1])) / (m[2] == "ms" ? 1000 : 1);
      if (m[3].matched) {  // The latest evaluation.
        res.set_content(one(static_cast<double>(kEvaluationMs) / 1000), "application/json");
      } else if (q.find(kReportRulesVersionSeries) != std::string::npos) {  // Its hours, and version.
        double hours = (seconds + 1800) / kHour - static_cast<double>(missed_hours);
        res.set_content(one(q.find("count") != std::string::npos ? hours : rules_version),
                        "application/json");
      } else if (q.find("sum_over_time") != std::string::npos) {
        res.set_content(vector(R"({"metric":{"uuid":"GPU-1","state":"busy"},"value":[0,")" +
                               fmt::format("{:.3f}", seconds + 1800) + "\"]}"),
                        "application/json");
      } else if (seconds > static_cast<double>(slow_raw_seconds)) {
        // Longer than the client waits (a second).
        std::this_thread::sleep_for(std::chrono::milliseconds(1600));
        res.set_content(vector(""), "application/json");
      } else if (seconds > static_cast<double>(max_raw_seconds) &&
                 (limited_family.empty() || q.find(limited_family) != std::string::npos)) {
        res.status = 422;
        res.set_content(
            R"({"status":"error","errorType":"execution","error":"query processing would load too )"
            R"(many samples into memory in query execution"})",
            "application/json");
      } else {
        res.set_content(vector(R"({"metric":{"uuid":"GPU-1","state":"busy"},"value":[0,")" +
                               fmt::format("{:.3f}", seconds) + "\"]}"),
                        "application/json");
      }
    });
    Start();
  }
};

std::unique_ptr<prom::PromClient> PiecesClient(const std::string& url,
                                               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  prom::PromOptions o;
  o.url = url;
  o.timeout = timeout;
  return std::move(prom::PromClient::Make(o)).value();
}

const std::vector<IncreaseQuery> kStates = {{"tarmac_gpu_state_seconds_total", "uuid, state"}};

TEST(ReportPiecesTest, WithTheHourlySeriesAWeekIsThreeQueriesAndAddsUpToTheRange) {
  PiecesStore store(1 << 30, 3);
  int64_t since = kUntil - 7 * 86400;
  Result<Increases> read = ReadIncreases(PiecesClient(store.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(read.value().read_hourly);
  EXPECT_EQ(read.value().last_evaluation_ms, kEvaluationMs);
  EXPECT_EQ(read.value().evaluation_hours, 167);
  // The anchor, the coverage, then the edges and the hours.
  EXPECT_EQ(read.value().queries_sent, 2 + 3 + 3);
  ASSERT_EQ(read.value().samples[0].size(), 1u);
  EXPECT_NEAR(read.value().samples[0][0].value, 7 * 86400, 1e-6);
  EXPECT_TRUE(read.value().warnings.empty());
  // An hour the store missed: said, and the raw counters read.
  PiecesStore missed(1 << 30, 3, false, 1);
  read = ReadIncreases(PiecesClient(missed.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_FALSE(read.value().read_hourly);
  ASSERT_EQ(read.value().warnings.size(), 1u);
  EXPECT_NE(read.value().warnings[0].find("cover 166 of the range's 167 hours"), std::string::npos);
  EXPECT_NEAR(read.value().samples[0][0].value, 7 * 86400, 1e-6);
}

TEST(ReportPiecesTest, WithoutTheRulesTheRawRangeIsCutUntilTheStoreTakesItAndSaysWhy) {
  PiecesStore store(86400, 0);
  int64_t since = kUntil - 7 * 86400;
  Result<Increases> read = ReadIncreases(PiecesClient(store.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_FALSE(read.value().read_hourly);
  // 7 days in pieces of a day at most: 1 refused, 2 refused, 4 refused, 8 taken.
  EXPECT_EQ(read.value().samples[0][0].value, 7 * 86400);
  EXPECT_EQ(read.value().queries_sent, 2 + 1 + 2 + 4 + 8) << "the anchor, then the pieces";
  ASSERT_EQ(read.value().warnings.size(), 1u);
  EXPECT_NE(read.value().warnings[0].find("no hourly series"), std::string::npos);
  // An older rule set: said, and the raw counters read.
  PiecesStore older(1 << 30, 2);
  read = ReadIncreases(PiecesClient(older.Url()).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read.value().read_hourly);
  EXPECT_NE(read.value().warnings[0].find("older than the version 3"), std::string::npos);
}

// Each family over each piece stands alone: a family the store refuses is
// cut until it takes it; the other's answer for the same piece stands,
// neither asked again nor counted twice.
TEST(ReportPiecesTest, OnlyTheRefusedFamilyIsCutTheOthersAnswerStands) {
  PiecesStore store(86400, 0, false, 0, 1 << 30, "tarmac_gpu_energy_joules_total");
  int64_t since = kUntil - 7 * 86400;
  const std::vector<IncreaseQuery> two = {{"tarmac_gpu_state_seconds_total", "uuid, state"},
                                          {"tarmac_gpu_energy_joules_total", "uuid, state"}};
  Result<Increases> read = ReadIncreases(PiecesClient(store.Url()).get(), two, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read.value().samples.size(), 2u);
  EXPECT_EQ(read.value().samples[0].at(0).value, 7 * 86400);
  EXPECT_EQ(read.value().samples[1].at(0).value, 7 * 86400);
  // The anchor; the week of each; the energy's halves, quarters, eighths.
  EXPECT_EQ(read.value().queries_sent, 2 + 2 + 2 + 4 + 8);
}

TEST(ReportPiecesTest, APieceTheStoreDoesNotAnswerInTimeIsCutToo) {
  PiecesStore slow(1 << 30, 0, false, 0, 2 * 86400);
  int64_t since = kUntil - 7 * 86400;
  Result<Increases> read =
      ReadIncreases(PiecesClient(slow.Url(), std::chrono::seconds(1)).get(), kStates, since, kUntil);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_NEAR(read.value().samples[0][0].value, 7 * 86400, 1e-6);
  // The week and its halves too slow (over 2 days); its quarters answered.
  EXPECT_EQ(read.value().queries_sent, 2 + 1 + 2 + 4);
}

TEST(ReportPiecesTest, AStoreOverItsLimitEvenForAnHourOrAPartialAnswerIsAnError) {
  PiecesStore tiny(60, 0);
  Result<Increases> read = ReadIncreases(PiecesClient(tiny.Url()).get(), kStates, kUntil - 86400, kUntil);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(read.status().ToString().find("too many samples"), std::string::npos);
  PiecesStore partial(1 << 30, 3, true);
  read = ReadIncreases(PiecesClient(partial.Url()).get(), kStates, kUntil - 86400, kUntil);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().ToString().find("partial data"), std::string::npos) << read.status().ToString();
}

}  // namespace
}  // namespace tarmac::fleet
