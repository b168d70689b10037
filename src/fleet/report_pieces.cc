// SPDX-License-Identifier: Apache-2.0
#include "fleet/report_pieces.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "node/metric_families.h"

namespace tarmac::fleet {
namespace {

using prom::QueryResult;
using prom::Sample;

constexpr int64_t kHourSeconds = 3600;

// Each counter the report reads and its hourly series (tarmac-report).
constexpr std::pair<const char*, const char*> kHourlySeries[] = {
    {node::family::kGpuStateSecondsTotal, "uuid:tarmac_gpu_state_seconds:increase1h"},
    {node::family::kGpuLeaseSecondsTotal, "uuid:tarmac_gpu_lease_seconds:increase1h"},
    {node::family::kGpuEnergyJoulesTotal, "uuid:tarmac_gpu_energy_joules:increase1h"},
    {node::family::kGpuIdleCostTotal, "uuid:tarmac_gpu_idle_cost:increase1h"},
    {node::family::kGpuJobSecondsTotal, "uuid:tarmac_gpu_job_seconds:increase1h"},
    {node::family::kGpuUserSecondsTotal, "uuid:tarmac_gpu_user_seconds:increase1h"},
    {node::family::kGpuUserCostTotal, "user:tarmac_gpu_user_cost:increase1h"},
};

int64_t FloorHour(int64_t t) { return t - ((t % kHourSeconds) + kHourSeconds) % kHourSeconds; }
int64_t CeilHour(int64_t t) { return FloorHour(t) == t ? t : FloorHour(t) + kHourSeconds; }

std::string Offset(int64_t seconds) { return seconds > 0 ? fmt::format(" offset {}s", seconds) : ""; }

// The whole hours of [since, until]: their span and how long before
// `until` the last one ends (span 0 when there is none).
std::pair<int64_t, int64_t> WholeHours(int64_t since_unix, int64_t until_unix) {
  int64_t first = CeilHour(since_unix), last = FloorHour(until_unix);
  if (last <= first) return {0, 0};
  return {last - first, until_unix - last};
}

// Whether the store keeps the hourly series for every whole hour of the
// range, at this version or a later one (two queries, at `until`).
Result<HourlyCoverage> ReadCoverage(prom::PromClient* client, int64_t since_unix, int64_t until_unix) {
  auto [span, offset] = WholeHours(since_unix, until_unix);
  std::string window =
      fmt::format("(max({}))[{}s:1h]{}", kReportRulesVersionSeries, span - 1, Offset(offset));
  Result<std::vector<QueryResult>> answers = client->QueryAll(
      {"count_over_time(" + window + ")", "min_over_time(" + window + ")"}, static_cast<double>(until_unix));
  if (!answers.ok()) return answers.status();
  auto first = [&](size_t i) {
    const std::vector<Sample>& s = answers.value()[i].samples;
    return s.empty() ? 0.0 : s.front().value;
  };
  return JudgeCoverage(span / kHourSeconds, static_cast<int64_t>(first(0)), first(1));
}

}  // namespace

std::string HourlySeriesOf(const std::string& raw) {
  for (const auto& [counter, hourly] : kHourlySeries) {
    if (counter == raw) return hourly;
  }
  return "";
}

std::vector<Piece> PlanPieces(int64_t since_unix, int64_t until_unix, bool hourly) {
  int64_t span = std::max<int64_t>(until_unix - since_unix, 1);
  auto [hours, after] = WholeHours(since_unix, until_unix);
  if (!hourly || span < kHourlyFromSeconds || hours == 0) return {Piece{false, span, 0}};
  std::vector<Piece> pieces;
  int64_t before = span - hours - after;
  if (before > 0) pieces.push_back(Piece{false, before, after + hours});
  pieces.push_back(Piece{true, hours, after});
  if (after > 0) pieces.push_back(Piece{false, after, 0});
  return pieces;
}

bool SplitPiece(const Piece& piece, Piece* first, Piece* second) {
  if (piece.seconds <= kSmallestPieceSeconds) return false;
  int64_t later = piece.hourly ? (piece.seconds / kHourSeconds / 2) * kHourSeconds : piece.seconds / 2;
  *first = Piece{piece.hourly, piece.seconds - later, piece.end_offset_seconds + later};
  *second = Piece{piece.hourly, later, piece.end_offset_seconds};
  return true;
}

std::string PieceQuery(const IncreaseQuery& q, const Piece& piece) {
  // The hourly samples at the whole hours ending the piece's hours: a
  // second short of the span, so the hour ending at its start is left out
  // (a range's left end is inside it in Prometheus 2, outside in 3).
  if (piece.hourly) {
    return fmt::format("sum by ({}) (sum_over_time({}[{}s:1h]{}))", q.labels, HourlySeriesOf(q.raw),
                       piece.seconds - 1, Offset(piece.end_offset_seconds));
  }
  return fmt::format("sum by ({}) (increase({}[{}s]{}))", q.labels, q.raw, piece.seconds,
                     Offset(piece.end_offset_seconds));
}

std::vector<Sample> SumByLabels(const std::vector<std::vector<Sample>>& parts) {
  std::map<std::map<std::string, std::string>, Sample> sums;
  for (const std::vector<Sample>& part : parts) {
    for (const Sample& s : part) {
      auto [it, fresh] = sums.try_emplace(s.labels, s);
      if (!fresh) it->second.value += s.value;
    }
  }
  std::vector<Sample> out;
  out.reserve(sums.size());
  for (auto& [labels, s] : sums) out.push_back(std::move(s));
  return out;
}

HourlyCoverage JudgeCoverage(int64_t hours_in_range, int64_t hours_recorded, double lowest_version) {
  HourlyCoverage c{hours_in_range, hours_recorded, lowest_version, ""};
  const std::string install =
      "install deploy/prometheus/tarmac.rules.yml of this tarmac in the store's rules "
      "(docs/fleet.md#long-ranges)";
  if (hours_recorded == 0) {
    c.why = fmt::format(
        "the store has no hourly series of tarmac's recording rules ({}) in this range: read from the raw "
        "counters, which over a long range of a large fleet can pass the store's limits; {}",
        kReportRulesVersionSeries, install);
  } else if (lowest_version < kReportRulesVersion) {
    c.why = fmt::format(
        "the store's tarmac recording rules are version {:g}, older than the version {} this tarmac reads: "
        "read from the raw counters; {}",
        lowest_version, kReportRulesVersion, install);
  } else if (hours_recorded < hours_in_range) {
    c.why = fmt::format(
        "the hourly series cover {} of the range's {} whole hours (the rules came later, or the store "
        "missed evaluations): read from the raw counters",
        hours_recorded, hours_in_range);
  }
  return c;
}

Result<Increases> ReadIncreases(prom::PromClient* client, const std::vector<IncreaseQuery>& queries,
                                int64_t since_unix, int64_t until_unix) {
  Increases out;
  bool hourly = false;
  if (until_unix - since_unix >= kHourlyFromSeconds && WholeHours(since_unix, until_unix).first > 0) {
    Result<HourlyCoverage> coverage = ReadCoverage(client, since_unix, until_unix);
    if (!coverage.ok()) return coverage.status();
    out.queries_sent += 2;
    hourly = coverage.value().why.empty();
    if (!hourly) out.warnings.push_back(coverage.value().why);
  }
  out.read_hourly = hourly;
  // Pieces still to read, and each read piece's answers (one per query).
  std::vector<Piece> todo = PlanPieces(since_unix, until_unix, hourly);
  std::vector<std::vector<std::vector<Sample>>> read(queries.size());
  std::set<std::string> warned(out.warnings.begin(), out.warnings.end());
  while (!todo.empty()) {
    std::vector<std::string> promqls;
    for (const Piece& piece : todo) {
      for (const IncreaseQuery& q : queries) promqls.push_back(PieceQuery(q, piece));
    }
    std::vector<Result<QueryResult>> answers = client->QueryEach(promqls, static_cast<double>(until_unix));
    out.queries_sent += static_cast<int>(promqls.size());
    std::vector<Piece> next;
    for (size_t p = 0; p < todo.size(); ++p) {
      const size_t base = p * queries.size();
      auto refused = std::find_if(answers.begin() + static_cast<ptrdiff_t>(base),
                                  answers.begin() + static_cast<ptrdiff_t>(base + queries.size()),
                                  [](const Result<QueryResult>& a) { return !a.ok(); });
      if (refused != answers.begin() + static_cast<ptrdiff_t>(base + queries.size())) {
        Piece first, second;
        if (refused->status().code() != StatusCode::kResourceExhausted ||
            !SplitPiece(todo[p], &first, &second))
          return refused->status();
        next.push_back(first);
        next.push_back(second);
        continue;
      }
      for (size_t q = 0; q < queries.size(); ++q) {
        QueryResult& answer = answers[base + q].value();
        if (answer.is_partial) {
          return Status::Unavailable(
              "the store answered with partial data (one of the stores behind it did not answer): the "
              "report's totals would be short; ask again once every store answers");
        }
        for (const std::string& w : answer.warnings) {
          if (warned.insert(w).second) out.warnings.push_back(w);
        }
        read[q].push_back(std::move(answer.samples));
      }
    }
    todo = std::move(next);
  }
  for (std::vector<std::vector<Sample>>& parts : read) out.samples.push_back(SumByLabels(parts));
  return out;
}

}  // namespace tarmac::fleet
