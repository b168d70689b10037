// SPDX-License-Identifier: Apache-2.0
//
// Where `tarmac fleet report` reads each counter's increase over a range,
// so that a week of a large fleet scraped every 15 s stays within the
// store's limits (docs/fleet.md#long-ranges). The range is cut in pieces,
// each read by one query per counter, and the answers added up by label set:
//
// - the hours the shipped recording rules evaluated (group tarmac-report of
//   deploy/prometheus/tarmac.rules.yml, every hour: each sample is the
//   increase over the hour before it), from their hourly series, when the
//   store has them, at this version or a later one, for every hour: one
//   sample loaded per GPU and hour instead of 240, read series by series
//   (a range selector, no subquery);
// - the edges before the first of those hours and after the last, and the
//   whole range when the hourly series do not cover it, from the raw
//   counters.
//
// The rules are evaluated at the same minute and second of every hour, set
// by the store (Prometheus hashes the group's name and file): the pieces
// follow those evaluations, learned from the version series' timestamps.
//
// A piece the store refuses as over one of its limits (too many samples, its
// timeout), or that does not answer within the client's timeout, is cut in
// two and asked again, down to an hour; then the refusal stands. An
// answer marked partial (a store behind Thanos, Mimir or VictoriaMetrics did
// not answer) is refused: its totals would be short. Every query is built
// from numbers and fixed names only.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "prom/prom_client.h"

namespace tarmac::fleet {

// The version of the tarmac-report rules this tarmac reads: the value of
// `tarmac:report_rules_version` they record. Version 1 evaluated every
// minute; 2 every hour; 3 adds the roll-ups per node and model and the
// mostly-idle margin per GPU, so that a report by node, model or holder
// reads a series per node where 2 read one per GPU and state.
inline constexpr int kReportRulesVersion = 3;
// Per GPU and hour: its idle and held-idle seconds less four times its busy
// ones. Summed over a range it is positive exactly when the GPU was idle
// more than 80 % of the time it was known (idle > 0.8 (idle + busy)): one
// series a GPU instead of its states'.
inline constexpr const char* kMostlyIdleMarginSeries =
    "uuid:tarmac_gpu_mostly_idle_margin_seconds:increase1h";
// The series that says which version of the rules a store evaluates.
inline constexpr const char* kReportRulesVersionSeries = "tarmac:report_rules_version";
// A range shorter than this is read from the raw counters alone (cheap,
// and exact at its edges).
inline constexpr int64_t kHourlyFromSeconds = 3 * 3600;
// A piece this long or shorter is never cut again.
inline constexpr int64_t kSmallestPieceMs = 3600 * 1000;
// How far before the range's end the rules' latest evaluation is looked for.
inline constexpr int64_t kEvaluationLookbackSeconds = 2 * 3600;

// One counter's increase, summed by `labels` (a subset of the labels its
// hourly series keeps): `sum by (labels) (increase(raw[...]))`.
struct IncreaseQuery {
  const char* raw;     // The counter, e.g. tarmac_gpu_state_seconds_total.
  std::string labels;  // e.g. "hostname, uuid, state".
  // Matchers that part the family's series between them (`{state="busy"}`,
  // ..., `{state!~"busy|..."}`: together every series, none twice), each
  // part asked on its own and summed: a family whose one answer would be
  // hundreds of thousands of series comes in answers a fraction of that,
  // one at a time. Empty: the family whole.
  std::vector<std::string> parts = {};
  // The hourly series read for the whole hours: "" for the counter's own
  // (HourlySeriesOf), or a roll-up of it (NodeHourlySeriesOf,
  // kMostlyIdleMarginSeries) that keeps `labels`.
  std::string hourly = {};
  // The counter's series each weighted by the matcher that selects them
  // before the sum (`increase(raw{m1}[..]) or w2 * increase(raw{m2}[..])`),
  // as the hourly series named records it; series none selects are left
  // out. Empty: every series, weight 1. Not with `parts`.
  std::vector<std::pair<std::string, int>> weights = {};
};

// The hourly series of a counter the report reads
// (uuid:tarmac_gpu_state_seconds:increase1h for
// tarmac_gpu_state_seconds_total); "" for another name.
std::string HourlySeriesOf(const std::string& raw);
// Its roll-up per node and model (hostname_model:tarmac_gpu_state_seconds:
// increase1h, by hostname, model and the counter's own labels but the
// GPU's); "" for a counter without one.
std::string NodeHourlySeriesOf(const std::string& raw);
// The margin's weights of tarmac_gpu_state_seconds_total's states (idle and
// held idle 1, busy -4, any other 0), as the rules record it.
std::vector<std::pair<std::string, int>> MostlyIdleMarginWeights();

// A stretch of the range: `ms` long, ending `end_offset_ms` before the
// range's end, read from the hourly series (then it is whole evaluation
// hours, ending at an evaluation) or from the raw counter. Milliseconds:
// the store evaluates the rules at any millisecond of the hour.
struct Piece {
  bool hourly = false;
  int64_t ms = 0;
  int64_t end_offset_ms = 0;
  bool operator==(const Piece&) const = default;
};

// The pieces of [since, until]: given `evaluation_ms`, an evaluation of the
// rules at or before `until`, and a range of kHourlyFromSeconds or more, the
// raw edge before the first evaluation hour that starts inside the range
// (if any), the evaluation hours up to `evaluation_ms` as one hourly piece,
// the raw edge after it (if any); else the whole range as one raw piece.
// They tile the range.
std::vector<Piece> PlanPieces(int64_t since_ms, int64_t until_ms, std::optional<int64_t> evaluation_ms);

// The piece in two halves that tile it (an hourly piece at an evaluation);
// false when it is kSmallestPieceMs long or shorter.
bool SplitPiece(const Piece& piece, Piece* first, Piece* second);

// The query for `q` (its series that `matcher` selects, "" for all) over
// `piece`, evaluated at the range's end.
std::string PieceQuery(const IncreaseQuery& q, const Piece& piece, const std::string& matcher = "");

// Samples summed by label set as answers come, each label set held once:
// the first answer's samples themselves, sorted, and the later answers'
// added in place (a later answer of a report's pieces names the same GPUs;
// only label sets new to the sums are kept from it). No node per label set:
// a week's states of a large fleet are hundreds of thousands of them.
class LabelSums {
 public:
  void Add(std::vector<prom::Sample> samples);
  // The sums, in label order; empties this.
  std::vector<prom::Sample> Take();

 private:
  // Sorts sums_ from `from` on by labels and sums the label sets given
  // twice there, then merges it with what comes before.
  void Settle(size_t from);
  std::vector<prom::Sample> sums_;  // Sorted by labels, each label set once.
};

// The samples of several answers summed by label set, in label order.
std::vector<prom::Sample> SumByLabels(const std::vector<std::vector<prom::Sample>>& parts);

// Whether the hourly series can be read for the evaluation hours of a
// range, from the version series' samples in them: `hours_in_range`
// expected; the store that recorded fewest has `fewest_recorded`, the one
// that recorded most `most_recorded` (more than expected: some hours are
// held twice, and would be counted twice); the lowest version seen. An
// empty `why` when they can; else why not, in words, and what to do.
struct HourlyCoverage {
  int64_t hours_in_range = 0;
  int64_t fewest_recorded = 0;
  int64_t most_recorded = 0;
  double lowest_version = 0;
  std::string why;
};
HourlyCoverage JudgeCoverage(int64_t hours_in_range, int64_t fewest_recorded, int64_t most_recorded,
                             double lowest_version);

// Which evaluation of the rules anchors the pieces, from the latest
// evaluation each version series had by the range's end (the newest and
// the oldest of them, Unix ms; 0 when there is none): the oldest, when they
// all fall at the same second of the hour; else why not.
struct Anchor {
  std::optional<int64_t> evaluation_ms;
  std::string why;
};
Anchor ChooseAnchor(int64_t newest_ms, int64_t oldest_ms);

struct Increases {
  std::vector<std::vector<prom::Sample>> samples;  // Per query, in the order asked.
  std::vector<std::string> warnings;               // The store's, and why raw counters were read.
  bool read_hourly = false;                        // The evaluation hours came from the hourly series.
  // With read_hourly: the last evaluation read and how many hours before
  // it (each ends at an evaluation).
  int64_t last_evaluation_ms = 0;
  int64_t evaluation_hours = 0;
  int queries_sent = 0;
};

// Every query's increase over [since, until], evaluated at `until`.
Result<Increases> ReadIncreases(prom::PromClient* client, const std::vector<IncreaseQuery>& queries,
                                int64_t since_unix, int64_t until_unix);

// A range query over [start, end] at `step`, cut in two at a step while the
// store refuses it as over one of its limits or it is not answered within
// the client's timeout (as a piece above), down to a single step; each
// series' points joined in time order. An answer marked partial is refused,
// as above.
Result<prom::RangeResult> QueryRangeInPieces(prom::PromClient* client, const std::string& promql,
                                             double start_unix, double end_unix, double step_seconds);

}  // namespace tarmac::fleet
