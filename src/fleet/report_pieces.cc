// SPDX-License-Identifier: Apache-2.0
#include "fleet/report_pieces.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "node/metric_families.h"

namespace tarmac::fleet {
namespace {

using prom::QueryResult;
using prom::Sample;

constexpr int64_t kHourMs = 3600 * 1000;

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
// Those rolled up per node and model too.
constexpr std::pair<const char*, const char*> kNodeHourlySeries[] = {
    {node::family::kGpuStateSecondsTotal, "hostname_model:tarmac_gpu_state_seconds:increase1h"},
    {node::family::kGpuLeaseSecondsTotal, "hostname_model:tarmac_gpu_lease_seconds:increase1h"},
    {node::family::kGpuEnergyJoulesTotal, "hostname_model:tarmac_gpu_energy_joules:increase1h"},
    {node::family::kGpuIdleCostTotal, "hostname_model:tarmac_gpu_idle_cost:increase1h"},
};

template <size_t N>
std::string SeriesOf(const std::pair<const char*, const char*> (&table)[N], const std::string& raw) {
  for (const auto& [counter, hourly] : table) {
    if (counter == raw) return hourly;
  }
  return "";
}

// A PromQL duration: whole seconds where it is, else milliseconds.
std::string Duration(int64_t ms) {
  return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{}ms", ms);
}
std::string Offset(int64_t ms) { return ms > 0 ? " offset " + Duration(ms) : ""; }

// The range selector of an hourly piece: from half an hour after the
// evaluation before its first hour to its last evaluation, so that it
// holds its hours' samples and no other, wherever the range's left end
// is counted (inside in Prometheus 2, outside in 3).
std::string HourlyWindow(const Piece& piece) {
  return fmt::format("[{}]{}", Duration(piece.ms - kHourMs / 2), Offset(piece.end_offset_ms));
}

// Whether a shorter query may be answered where this one was refused: over
// one of the store's limits (samples, its timeout), or not answered within
// the client's timeout.
bool IsWorthCutting(const Status& refusal) {
  return refusal.code() == StatusCode::kResourceExhausted || refusal.code() == StatusCode::kDeadlineExceeded;
}

// The value of answer `i`'s first sample; 0 for an empty answer (an
// aggregation over no series).
double FirstValue(const std::vector<QueryResult>& answers, size_t i) {
  const std::vector<Sample>& s = answers[i].samples;
  return s.empty() ? 0.0 : s.front().value;
}

Status PartialAnswer() {
  return Status::Unavailable(
      "the store answered with partial data (one of the stores behind it did not answer): the report's "
      "totals would be short; ask again once every store answers");
}

// Each version series' latest evaluation by `until`: the newest and the
// oldest (two queries).
Result<Anchor> ReadAnchor(prom::PromClient* client, int64_t until_unix) {
  std::string latest = fmt::format("max_over_time(timestamp({})[{}s:10s])", kReportRulesVersionSeries,
                                   kEvaluationLookbackSeconds);
  Result<std::vector<QueryResult>> answers =
      client->QueryAll({"max(" + latest + ")", "min(" + latest + ")"}, static_cast<double>(until_unix));
  if (!answers.ok()) return answers.status();
  return ChooseAnchor(std::llround(FirstValue(answers.value(), 0) * 1000),
                      std::llround(FirstValue(answers.value(), 1) * 1000));
}

// Whether the store keeps the hourly series for every evaluation hour of
// the hourly piece, once, at this version or a later one (three queries).
Result<HourlyCoverage> ReadCoverage(prom::PromClient* client, const Piece& hourly, int64_t until_unix) {
  std::string window = std::string(kReportRulesVersionSeries) + HourlyWindow(hourly);
  Result<std::vector<QueryResult>> answers =
      client->QueryAll({"min(count_over_time(" + window + "))", "max(count_over_time(" + window + "))",
                        "min(min_over_time(" + window + "))"},
                       static_cast<double>(until_unix));
  if (!answers.ok()) return answers.status();
  const std::vector<QueryResult>& a = answers.value();
  return JudgeCoverage(hourly.ms / kHourMs, static_cast<int64_t>(FirstValue(a, 0)),
                       static_cast<int64_t>(FirstValue(a, 1)), FirstValue(a, 2));
}

}  // namespace

std::string HourlySeriesOf(const std::string& raw) { return SeriesOf(kHourlySeries, raw); }

std::string NodeHourlySeriesOf(const std::string& raw) { return SeriesOf(kNodeHourlySeries, raw); }

std::vector<std::pair<std::string, int>> MostlyIdleMarginWeights() {
  return {
      {"{state=~\"idle|held_idle\"}", 1}, {"{state=\"busy\"}", -4}, {"{state!~\"idle|held_idle|busy\"}", 0}};
}

std::vector<Piece> PlanPieces(int64_t since_ms, int64_t until_ms, std::optional<int64_t> evaluation_ms) {
  int64_t span = std::max<int64_t>(until_ms - since_ms, 1);
  if (!evaluation_ms || span < kHourlyFromSeconds * 1000 || *evaluation_ms > until_ms)
    return {Piece{false, span, 0}};
  // The evaluation hours inside the range, ending at the evaluation given.
  int64_t last = *evaluation_ms, hours = (last - since_ms) / kHourMs;
  if (hours <= 0) return {Piece{false, span, 0}};
  int64_t after = until_ms - last, before = span - hours * kHourMs - after;
  std::vector<Piece> pieces;
  if (before > 0) pieces.push_back(Piece{false, before, after + hours * kHourMs});
  pieces.push_back(Piece{true, hours * kHourMs, after});
  if (after > 0) pieces.push_back(Piece{false, after, 0});
  return pieces;
}

bool SplitPiece(const Piece& piece, Piece* first, Piece* second) {
  if (piece.ms <= kSmallestPieceMs) return false;
  int64_t later = piece.hourly ? (piece.ms / kHourMs / 2) * kHourMs : piece.ms / 2;
  *first = Piece{piece.hourly, piece.ms - later, piece.end_offset_ms + later};
  *second = Piece{piece.hourly, later, piece.end_offset_ms};
  return true;
}

std::string PieceQuery(const IncreaseQuery& q, const Piece& piece, const std::string& matcher) {
  if (piece.hourly)
    return fmt::format("sum by ({}) (sum_over_time({}{}{}))", q.labels,
                       q.hourly.empty() ? HourlySeriesOf(q.raw) : q.hourly, matcher, HourlyWindow(piece));
  auto increase = [&](const std::string& m) {
    return fmt::format("increase({}{}[{}]{})", q.raw, m, Duration(piece.ms), Offset(piece.end_offset_ms));
  };
  if (q.weights.empty()) return fmt::format("sum by ({}) ({})", q.labels, increase(matcher));
  std::string terms;
  for (const auto& [m, weight] : q.weights) {
    if (!terms.empty()) terms += " or ";
    terms += weight == 1 ? increase(m) : fmt::format("{} * {}", weight, increase(m));
  }
  return fmt::format("sum by ({}) ({})", q.labels, terms);
}

namespace {
bool ByLabels(const Sample& a, const Sample& b) { return a.labels < b.labels; }
}  // namespace

void LabelSums::Add(std::vector<Sample> samples) {
  if (sums_.empty()) {
    sums_ = std::move(samples);
    Settle(0);
    sums_.shrink_to_fit();
    return;
  }
  const size_t before = sums_.size();
  for (Sample& s : samples) {
    // Among the sums before this answer (what it adds after them is settled
    // at the end); push_back may move them, so their end is taken anew.
    auto known_end = sums_.begin() + static_cast<std::ptrdiff_t>(before);
    auto it = std::lower_bound(sums_.begin(), known_end, s, ByLabels);
    if (it != known_end && it->labels == s.labels) {
      it->value += s.value;
    } else {
      sums_.push_back(std::move(s));
    }
  }
  if (sums_.size() > before) Settle(before);
}

void LabelSums::Settle(size_t from) {
  auto first = sums_.begin() + static_cast<std::ptrdiff_t>(from);
  std::stable_sort(first, sums_.end(), ByLabels);
  auto kept = first;
  for (auto it = first; it != sums_.end(); ++it) {
    if (kept != first && std::prev(kept)->labels == it->labels) {
      std::prev(kept)->value += it->value;
    } else {
      if (kept != it) *kept = std::move(*it);
      ++kept;
    }
  }
  sums_.erase(kept, sums_.end());
  std::inplace_merge(sums_.begin(), sums_.begin() + static_cast<std::ptrdiff_t>(from), sums_.end(), ByLabels);
}

std::vector<Sample> LabelSums::Take() {
  std::vector<Sample> out = std::move(sums_);
  sums_.clear();
  for (Sample& s : out) s.timestamp_seconds = 0;
  return out;
}

std::vector<Sample> SumByLabels(const std::vector<std::vector<Sample>>& parts) {
  LabelSums sums;
  for (const std::vector<Sample>& part : parts) sums.Add(part);
  return sums.Take();
}

HourlyCoverage JudgeCoverage(int64_t hours_in_range, int64_t fewest_recorded, int64_t most_recorded,
                             double lowest_version) {
  HourlyCoverage c{hours_in_range, fewest_recorded, most_recorded, lowest_version, ""};
  const std::string install =
      "install deploy/prometheus/tarmac.rules.yml of this tarmac in the store's rules "
      "(docs/fleet.md#long-ranges)";
  if (most_recorded == 0) {
    c.why = fmt::format(
        "the store has no hourly series of tarmac's recording rules ({}) in this range: read from the raw "
        "counters, which over a long range of a large fleet can pass the store's limits; {}",
        kReportRulesVersionSeries, install);
  } else if (lowest_version < kReportRulesVersion) {
    c.why = fmt::format(
        "the store's tarmac recording rules are version {:g}, older than the version {} this tarmac reads: "
        "read from the raw counters; {}",
        lowest_version, kReportRulesVersion, install);
  } else if (fewest_recorded < hours_in_range) {
    c.why = fmt::format(
        "the hourly series cover {} of the range's {} hours (the rules came later, or the store "
        "missed evaluations): read from the raw counters",
        fewest_recorded, hours_in_range);
  } else if (most_recorded > hours_in_range) {
    c.why = fmt::format(
        "the store holds {} evaluations of tarmac's recording rules for the range's {} hours, so some hours "
        "are held twice (two rulers evaluating the same rules, or a replay whose requests overlap): read "
        "from the raw counters; evaluate the rules in one place, or deduplicate (VictoriaMetrics: "
        "-dedup.minScrapeInterval)",
        most_recorded, hours_in_range);
  }
  return c;
}

Anchor ChooseAnchor(int64_t newest_ms, int64_t oldest_ms) {
  if (newest_ms <= 0) return Anchor{std::nullopt, ""};
  int64_t apart = (newest_ms - oldest_ms) % kHourMs;
  if (std::min(apart, kHourMs - apart) > 1000) {
    return Anchor{
        std::nullopt,
        fmt::format("the stores behind this one evaluate tarmac's recording rules at different times "
                    "of the hour ({} s apart), so their hours do not line up: read from the raw "
                    "counters; evaluate the rules in one place (one Prometheus, or one ruler)",
                    apart / 1000)};
  }
  return Anchor{oldest_ms, ""};
}

Result<Increases> ReadIncreases(prom::PromClient* client, const std::vector<IncreaseQuery>& queries,
                                int64_t since_unix, int64_t until_unix) {
  Increases out;
  const int64_t since_ms = since_unix * 1000, until_ms = until_unix * 1000;
  // The hourly series are read when the store evaluates the rules (an
  // anchor), for every hour they would be read for.
  std::optional<int64_t> anchor;
  if (until_unix - since_unix >= kHourlyFromSeconds) {
    Result<Anchor> found = ReadAnchor(client, until_unix);
    if (!found.ok()) return found.status();
    out.queries_sent += 2;
    std::vector<Piece> planned = PlanPieces(since_ms, until_ms, found.value().evaluation_ms);
    auto hourly = std::find_if(planned.begin(), planned.end(), [](const Piece& p) { return p.hourly; });
    if (!found.value().why.empty()) {
      out.warnings.push_back(found.value().why);
    } else if (hourly == planned.end()) {
      out.warnings.push_back(JudgeCoverage((until_unix - since_unix) / 3600, 0, 0, 0).why);
    } else {
      Result<HourlyCoverage> coverage = ReadCoverage(client, *hourly, until_unix);
      if (!coverage.ok()) return coverage.status();
      out.queries_sent += 3;
      if (coverage.value().why.empty()) {
        anchor = found.value().evaluation_ms;
        out.last_evaluation_ms = *anchor;
        out.evaluation_hours = hourly->ms / kHourMs;
      } else {
        out.warnings.push_back(coverage.value().why);
      }
    }
  }
  out.read_hourly = anchor.has_value();
  // Each query over each piece is asked on its own, and summed as its
  // answer comes (one decoded answer held at a time beside the sums); a
  // refused one is cut in two and asked again, the others stand.
  struct Ask {
    size_t query;
    Piece piece;
    std::string matcher;  // Of one of the query's parts; "" for all.
  };
  std::vector<Ask> todo;
  for (const Piece& piece : PlanPieces(since_ms, until_ms, anchor)) {
    for (size_t q = 0; q < queries.size(); ++q) {
      if (queries[q].parts.empty()) todo.push_back({q, piece, ""});
      for (const std::string& part : queries[q].parts) todo.push_back({q, piece, part});
    }
  }
  std::vector<LabelSums> sums(queries.size());
  std::set<std::string> warned(out.warnings.begin(), out.warnings.end());
  while (!todo.empty()) {
    std::vector<std::string> promqls;
    for (const Ask& ask : todo) promqls.push_back(PieceQuery(queries[ask.query], ask.piece, ask.matcher));
    std::vector<Ask> next;
    std::map<size_t, Status> failed;                  // By ask: those not worth cutting.
    std::map<size_t, std::vector<std::string>> said;  // By ask, to list in asking order.
    bool is_partial = false;
    client->QueryEachInTurn(promqls, static_cast<double>(until_unix), [&](size_t i, Result<QueryResult> a) {
      Piece first, second;
      if (!a.ok() && IsWorthCutting(a.status()) && SplitPiece(todo[i].piece, &first, &second)) {
        next.push_back({todo[i].query, first, todo[i].matcher});
        next.push_back({todo[i].query, second, todo[i].matcher});
      } else if (!a.ok()) {
        failed.emplace(i, a.status());
      } else {
        is_partial = is_partial || a.value().is_partial;
        said[i] = std::move(a.value().warnings);
        sums[todo[i].query].Add(std::move(a.value().samples));
      }
    });
    out.queries_sent += static_cast<int>(promqls.size());
    if (!failed.empty()) return failed.begin()->second;
    if (is_partial) return PartialAnswer();
    for (auto& [i, words] : said) {
      for (std::string& w : words) {
        if (warned.insert(w).second) out.warnings.push_back(std::move(w));
      }
    }
    todo = std::move(next);
  }
  for (LabelSums& s : sums) out.samples.push_back(s.Take());
  return out;
}

Result<prom::RangeResult> QueryRangeInPieces(prom::PromClient* client, const std::string& promql,
                                             double start_unix, double end_unix, double step_seconds) {
  Result<prom::RangeResult> whole = client->QueryRange(promql, start_unix, end_unix, step_seconds);
  if (whole.ok() && whole.value().is_partial) return PartialAnswer();
  const int64_t steps = std::llround((end_unix - start_unix) / step_seconds);
  if (whole.ok() || !IsWorthCutting(whole.status()) || steps < 1) return whole;
  const double middle = start_unix + static_cast<double>(steps / 2) * step_seconds;
  prom::RangeResult joined;
  std::map<prom::Labels, size_t> at;  // Labels: index in joined.series.
  for (auto [from, to] : {std::pair{start_unix, middle}, std::pair{middle + step_seconds, end_unix}}) {
    Result<prom::RangeResult> half = QueryRangeInPieces(client, promql, from, to, step_seconds);
    if (!half.ok()) return half.status();
    for (std::string& w : half.value().warnings) joined.warnings.push_back(std::move(w));
    for (prom::Series& series : half.value().series) {
      auto [it, fresh] = at.try_emplace(series.labels, joined.series.size());
      if (fresh) {
        joined.series.push_back(std::move(series));
      } else {
        std::vector<std::pair<double, double>>& points = joined.series[it->second].points;
        points.insert(points.end(), series.points.begin(), series.points.end());
      }
    }
  }
  return joined;
}

}  // namespace tarmac::fleet
