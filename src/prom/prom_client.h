// SPDX-License-Identifier: Apache-2.0
//
// A client of Prometheus' HTTP API (and of what speaks it: Thanos, Mimir,
// VictoriaMetrics): instant queries, with the server's warnings and its
// partial-response flag carried to the caller. Used by `tarmac fleet`.
//
// Errors: kUnavailable when the server cannot be reached or answers 5xx
// (what the CLI turns into exit 69), naming the URL and the cause;
// kInvalidArgument for a query it refuses (400/422: its errorType and
// error); kResourceExhausted when a query passed one of its limits (too many
// samples, a timeout), with a hint to ask for less; and what a hostile or
// broken server earns through the one bounded client (http/bounded_fetch.h):
// kResourceExhausted for an answer over max_answer_bytes or nested too
// deep, kDeadlineExceeded for one not complete within `timeout` (the whole
// answer, not each read). Never throws.
//
// Thread-compatible: one client per thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "prom/labels.h"

namespace tarmac::prom {

struct PromOptions {
  // http://host:port or https://host:port, with a path prefix when the
  // server is behind one (http://proxy/prometheus).
  std::string url;
  std::string bearer_token_file;  // Its content is sent as "Authorization: Bearer".
  std::string basic_auth_user;
  std::string basic_auth_password_file;
  std::string ca_file;  // https: the CA that signed the server's certificate.
  // The whole exchange of one answer: connect, ask, read to the last byte.
  std::chrono::milliseconds timeout{10000};
  // One answer's body at most; one byte more ends it with an error.
  int64_t max_answer_bytes = 64ll << 20;
};

// One series of an instant vector: its labels (__name__ included when the
// query keeps it) and its value at the evaluation time.
struct Sample {
  Labels labels;
  double value = 0;
  double timestamp_seconds = 0;

  // The label's value, or "" when the series has no such label.
  const std::string& Label(const std::string& name) const;
};

struct QueryResult {
  std::vector<Sample> samples;
  std::vector<std::string> warnings;  // What the server said besides the answer.
  bool is_partial = false;            // Thanos/Mimir: some stores did not answer.
};

// One series of a range query: its labels and its (time, value) points.
struct Series {
  Labels labels;
  std::vector<std::pair<double, double>> points;

  const std::string& Label(const std::string& name) const;
};

struct RangeResult {
  std::vector<Series> series;
  std::vector<std::string> warnings;
  bool is_partial = false;
};

class PromClient {
 public:
  // Checks the URL and reads the credential files (each error names the
  // option and the file).
  static Result<std::unique_ptr<PromClient>> Make(const PromOptions& options);
  ~PromClient();

  // An instant query at `at_unix_seconds` (default: the server's now). A
  // scalar answer is one sample without labels.
  Result<QueryResult> Query(const std::string& promql, std::optional<double> at_unix_seconds = std::nullopt);

  // Several instant queries at once, over up to eight connections, so that
  // the server works on them in parallel: the answers in the order asked,
  // or the first refusal. Credentials are the ones Make read: no file is
  // read again.
  Result<std::vector<QueryResult>> QueryAll(const std::vector<std::string>& promqls,
                                            std::optional<double> at_unix_seconds = std::nullopt);
  // As QueryAll, but each query's own answer or refusal, in the order asked:
  // a caller that can do something about one refusal (ask for less) learns
  // which query it was.
  std::vector<Result<QueryResult>> QueryEach(const std::vector<std::string>& promqls,
                                             std::optional<double> at_unix_seconds = std::nullopt);
  // As QueryEach, but each answer (or refusal) is handed to `take` with its
  // query's index as soon as it is decoded, one call at a time, in the
  // order the answers come: a caller that folds answers into its own form
  // holds one decoded answer at a time, not all of them (a fleet's twenty
  // answers of 80,000 samples each are hundreds of megabytes decoded).
  using TakeAnswer = std::function<void(size_t index, Result<QueryResult> answer)>;
  void QueryEachInTurn(const std::vector<std::string>& promqls, std::optional<double> at_unix_seconds,
                       const TakeAnswer& take);

  // A range query: `promql` evaluated every `step_seconds` from `start` to
  // `end` (Unix seconds).
  Result<RangeResult> QueryRange(const std::string& promql, double start, double end, double step_seconds);

  // The label sets of the series matching any of `matchers` that have
  // samples between `start` and `end` (/api/v1/series): what exists, without
  // reading a sample.
  Result<std::vector<std::map<std::string, std::string>>> Series(const std::vector<std::string>& matchers,
                                                                 double start, double end);

  const std::string& url() const { return options_.url; }

  // Every answer from now on must also be complete within `budget` of this
  // call, so that a reading made of many questions ends when its time is up
  // (the agent's console answers within its timeout whatever the server
  // does). Set between readings, not during one.
  void LimitTotalTime(std::chrono::milliseconds budget);

 private:
  struct Settings;
  struct Connection;
  struct Answer {
    int http_status = 0;
    std::string body;
    std::shared_ptr<void> held;  // Its bytes count against the answers read at once.
  };
  Result<Answer> Fetch(Connection* connection, const std::string& promql,
                       std::optional<double> at_unix_seconds);
  // POSTs `params` (a form) to `path` under the prefix, within the limits.
  Result<Answer> Post(Connection* connection, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& params);
  PromClient(PromOptions options, std::string path_prefix, Settings settings);
  PromOptions options_;
  std::string path_prefix_;
  std::unique_ptr<const Settings> settings_;
  std::unique_ptr<Connection> connection_;
  std::optional<std::chrono::steady_clock::time_point> total_deadline_;
  // The bytes of the answers this client and its siblings (QueryAll) hold:
  // at most twice max_answer_bytes between them.
  std::shared_ptr<std::atomic<int64_t>> bytes_held_ = std::make_shared<std::atomic<int64_t>>(0);
};

// The answer body of /api/v1/query (status, data, warnings) as a
// QueryResult, or the error it carries. Pure; exposed for the fuzzer.
Result<QueryResult> DecodeQueryAnswer(const std::string& body, int http_status, const std::string& what);

// The answer body of /api/v1/query_range (a matrix). Pure.
Result<RangeResult> DecodeRangeAnswer(const std::string& body, int http_status, const std::string& what);

// The answer body of /api/v1/series (a list of label sets). Pure.
Result<std::vector<std::map<std::string, std::string>>> DecodeSeriesAnswer(const std::string& body,
                                                                           int http_status,
                                                                           const std::string& what);

// `value` as a PromQL string literal: quoted, with backslash, quote and
// newline escaped, so no user input ever changes a query's shape.
std::string QuoteLabelValue(const std::string& value);

// A regular expression (RE2, as Prometheus and VictoriaMetrics read it)
// matching exactly `value`: every ASCII character but a letter, digit or
// `_` escaped, so that an alternation of known label values (`a|b`) is
// never more than those values.
std::string RegexLiteral(const std::string& value);

}  // namespace tarmac::prom
