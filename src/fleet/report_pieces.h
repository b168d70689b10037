// SPDX-License-Identifier: Apache-2.0
//
// Where `tarmac fleet report` reads each counter's increase over a range,
// so that a week of a large fleet scraped every 15 s stays within the
// store's limits (docs/fleet.md#long-ranges). The range is cut in pieces,
// each read by one query per counter, and the answers added up by label set:
//
// - the whole hours, from the hourly series the shipped recording rules
//   keep (deploy/prometheus/tarmac.rules.yml, group tarmac-report): one
//   sample loaded per GPU and hour instead of 240, when the store has them,
//   at this version or a later one, for every hour of the range;
// - the edges before the first whole hour and after the last, and the whole
//   range when the hourly series do not cover it, from the raw counters.
//
// A piece the store refuses as over one of its limits (too many samples) is
// cut in two and asked again, down to an hour; then the refusal stands. An
// answer marked partial (a store behind Thanos, Mimir or VictoriaMetrics did
// not answer) is refused: its totals would be short. Every query is built
// from numbers and fixed names only.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "prom/prom_client.h"

namespace tarmac::fleet {

// The version of the tarmac-report rules this tarmac reads: the value of
// `tarmac:report_rules_version` they record.
inline constexpr int kReportRulesVersion = 1;
// The series that says which version of the rules a store evaluates.
inline constexpr const char* kReportRulesVersionSeries = "tarmac:report_rules_version";
// A range shorter than this is read from the raw counters alone (cheap,
// and exact at its edges).
inline constexpr int64_t kHourlyFromSeconds = 3 * 3600;
// A piece this long or shorter is never cut again.
inline constexpr int64_t kSmallestPieceSeconds = 3600;

// One counter's increase, summed by `labels` (a subset of the labels its
// hourly series keeps): `sum by (labels) (increase(raw[...]))`.
struct IncreaseQuery {
  const char* raw;     // The counter, e.g. tarmac_gpu_state_seconds_total.
  std::string labels;  // e.g. "hostname, uuid, state".
};

// The hourly series of a counter the report reads
// (uuid:tarmac_gpu_state_seconds:increase1h for
// tarmac_gpu_state_seconds_total); "" for another name.
std::string HourlySeriesOf(const std::string& raw);

// A stretch of the range: `seconds` long, ending `end_offset_seconds`
// before the range's end, read from the hourly series (then its ends are
// whole hours) or from the raw counter.
struct Piece {
  bool hourly = false;
  int64_t seconds = 0;
  int64_t end_offset_seconds = 0;
  bool operator==(const Piece&) const = default;
};

// The pieces of [since, until]: with `hourly` and a range of
// kHourlyFromSeconds or more, the raw edge before the first whole hour (if
// any), the whole hours as one hourly piece, the raw edge after the last
// (if any); else the whole range as one raw piece. They tile the range.
std::vector<Piece> PlanPieces(int64_t since_unix, int64_t until_unix, bool hourly);

// The piece in two halves that tile it (an hourly piece at a whole hour);
// false when it is kSmallestPieceSeconds long or shorter.
bool SplitPiece(const Piece& piece, Piece* first, Piece* second);

// The query for `q` over `piece`, evaluated at the range's end.
std::string PieceQuery(const IncreaseQuery& q, const Piece& piece);

// The samples of several answers summed by label set, in label order.
std::vector<prom::Sample> SumByLabels(const std::vector<std::vector<prom::Sample>>& parts);

// Whether the hourly series can be read for the whole hours of a range,
// from the version series' hours in it: `hours_recorded` of
// `hours_in_range` (each hour's latest evaluation within 5 minutes of its
// end), the lowest version seen. An empty `why` when they can; else why
// not, in words, and what to install.
struct HourlyCoverage {
  int64_t hours_in_range = 0;
  int64_t hours_recorded = 0;
  double lowest_version = 0;
  std::string why;
};
HourlyCoverage JudgeCoverage(int64_t hours_in_range, int64_t hours_recorded, double lowest_version);

struct Increases {
  std::vector<std::vector<prom::Sample>> samples;  // Per query, in the order asked.
  std::vector<std::string> warnings;               // The store's, and why raw counters were read.
  bool read_hourly = false;                        // The whole hours came from the hourly series.
  int queries_sent = 0;
};

// Every query's increase over [since, until], evaluated at `until`.
Result<Increases> ReadIncreases(prom::PromClient* client, const std::vector<IncreaseQuery>& queries,
                                int64_t since_unix, int64_t until_unix);

}  // namespace tarmac::fleet
