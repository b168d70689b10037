// SPDX-License-Identifier: Apache-2.0
#include "prom/prom_client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/safe_file.h"
#include "http/bounded_fetch.h"
#include "prom/vector_answer.h"

namespace tarmac::prom {
namespace {

using nlohmann::json;

constexpr size_t kMaxCredentialBytes = 64 * 1024;

// A credential file's content without its trailing newline (as Prometheus'
// own bearer_token_file and password_file are read).
Result<std::string> ReadCredential(const std::string& option, const std::string& path) {
  // A regular file only, opened non-blocking (a FIFO or a device would
  // block or never end; the agent reads these as root for its fleet page).
  // A link as the last component is followed, as Prometheus follows it:
  // Kubernetes mounts secrets through links.
  Result<std::string> read =
      ReadForeignFile(path, {.max_bytes = kMaxCredentialBytes + 1, .follow_final_link = true});
  // The helper's message names the path.
  if (!read.ok()) return Status::InvalidArgument(fmt::format("{} {}", option, read.status().message()));
  std::string text = std::move(read).value();
  if (text.size() > kMaxCredentialBytes)
    return Status::InvalidArgument(fmt::format("{} {}: over 64 KiB", option, path));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return Status::InvalidArgument(fmt::format("{} {}: empty", option, path));
  return text;
}

// The string at `key` of object `j`, or `otherwise` when there is none or
// it is not a string (a server's answer is not trusted to have the types
// the API documents).
std::string StringAt(const json& j, const char* key, const std::string& otherwise = "") {
  if (!j.is_object()) return otherwise;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : otherwise;
}

// The same for a boolean: true only for JSON true.
bool TrueAt(const json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

double ParseValue(const json& v) {
  if (v.is_string()) return std::strtod(v.get<std::string>().c_str(), nullptr);  // "NaN", "+Inf" too.
  return v.is_number() ? v.get<double>() : 0;
}

void ReadLabels(const json& item, Labels* labels) {
  if (!item.contains("metric") || !item["metric"].is_object()) return;
  for (const auto& [key, value] : item["metric"].items()) {
    if (value.is_string()) labels->Set(key, value.get_ref<const std::string&>());
  }
  labels->Seal();
}

// The value of label `name` in `labels`, or "".
const std::string& LabelOf(const Labels& labels, const std::string& name) {
  static const std::string* const kEmpty = new std::string();
  const std::string* value = labels.Find(name);
  return value == nullptr ? *kEmpty : *value;
}

Result<Sample> DecodeSample(const json& item, const std::string& what) {
  Sample s;
  if (!item.is_object() || !item.contains("value") || !item["value"].is_array() ||
      item["value"].size() != 2) {
    return Status::Corruption(fmt::format("{}: a series without [time, value]", what));
  }
  s.timestamp_seconds = ParseValue(item["value"][0]);
  s.value = ParseValue(item["value"][1]);
  ReadLabels(item, &s.labels);
  return s;
}

}  // namespace

const std::string& Sample::Label(const std::string& name) const { return LabelOf(labels, name); }

// What a connection is made of, checked and read once (Make): a sibling
// connection for a query asked at once (QueryAll) reads no file again.
struct PromClient::Settings {
  std::string scheme_host_port;
  std::chrono::milliseconds timeout{0};
  int64_t max_answer_bytes = 0;
  std::optional<std::string> bearer_token;
  std::optional<std::pair<std::string, std::string>> basic_auth;  // User, password.
  std::string ca_file;
};

struct PromClient::Connection {
  explicit Connection(const Settings& settings) : client(settings.scheme_host_port) {
    auto seconds = [](std::chrono::milliseconds d) {
      return std::make_pair(static_cast<time_t>(d.count() / 1000),
                            static_cast<time_t>((d.count() % 1000) * 1000));
    };
    auto [s, us] = seconds(settings.timeout);
    client.set_connection_timeout(s, us);
    client.set_read_timeout(s, us);
    client.set_write_timeout(s, us);
    if (settings.bearer_token) client.set_bearer_token_auth(*settings.bearer_token);
    if (settings.basic_auth) client.set_basic_auth(settings.basic_auth->first, settings.basic_auth->second);
    if (!settings.ca_file.empty()) client.set_ca_cert_path(settings.ca_file);
  }
  httplib::Client client;
};

PromClient::PromClient(PromOptions options, std::string path_prefix, Settings settings)
    : options_(std::move(options)),
      path_prefix_(std::move(path_prefix)),
      settings_(std::make_unique<Settings>(std::move(settings))),
      connection_(std::make_unique<Connection>(*settings_)) {}

PromClient::~PromClient() = default;

Result<std::unique_ptr<PromClient>> PromClient::Make(const PromOptions& options) {
  static const std::regex kUrl(
      R"(^(https?)://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[^?#]*)?$)");
  std::smatch m;
  if (!std::regex_match(options.url, m, kUrl)) {
    return Status::InvalidArgument(
        fmt::format("--prometheus '{}': expected http://HOST:PORT or https://HOST:PORT[/PATH]", options.url));
  }
  std::string prefix = m[4].str();
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  Settings settings;
  settings.scheme_host_port = m[1].str() + "://" + m[2].str() + m[3].str();
  settings.timeout = options.timeout;
  settings.max_answer_bytes = options.max_answer_bytes;
  if (!options.bearer_token_file.empty()) {
    Result<std::string> token = ReadCredential("--bearer-token-file", options.bearer_token_file);
    if (!token.ok()) return token.status();
    settings.bearer_token = token.value();
  }
  if (!options.basic_auth_user.empty()) {
    std::string password;
    if (!options.basic_auth_password_file.empty()) {
      Result<std::string> read =
          ReadCredential("--basic-auth-password-file", options.basic_auth_password_file);
      if (!read.ok()) return read.status();
      password = read.value();
    }
    settings.basic_auth = std::make_pair(options.basic_auth_user, password);
  }
  if (!options.ca_file.empty()) {
    if (m[1].str() != "https") return Status::InvalidArgument("--ca-file: only for an https:// URL");
    if (::access(options.ca_file.c_str(), R_OK) != 0)
      return Status::InvalidArgument(fmt::format("--ca-file {}: cannot be read", options.ca_file));
    settings.ca_file = options.ca_file;
  }
  return std::unique_ptr<PromClient>(new PromClient(options, prefix, std::move(settings)));
}

const std::string& Series::Label(const std::string& name) const { return LabelOf(labels, name); }

Result<RangeResult> PromClient::QueryRange(const std::string& promql, double start, double end,
                                           double step_seconds) {
  Result<Answer> r = Post(connection_.get(), "/api/v1/query_range",
                          {{"query", promql},
                           {"start", fmt::format("{:.3f}", start)},
                           {"end", fmt::format("{:.3f}", end)},
                           {"step", fmt::format("{:.3f}", step_seconds)}});
  if (!r.ok()) return r.status();
  return DecodeRangeAnswer(r.value().body, r.value().http_status, fmt::format("prometheus {}", options_.url));
}

Result<std::vector<std::map<std::string, std::string>>> PromClient::Series(
    const std::vector<std::string>& matchers, double start, double end) {
  std::vector<std::pair<std::string, std::string>> params{{"start", fmt::format("{:.3f}", start)},
                                                          {"end", fmt::format("{:.3f}", end)}};
  for (const std::string& m : matchers) params.emplace_back("match[]", m);
  Result<Answer> r = Post(connection_.get(), "/api/v1/series", params);
  if (!r.ok()) return r.status();
  return DecodeSeriesAnswer(r.value().body, r.value().http_status,
                            fmt::format("prometheus {}", options_.url));
}

Result<PromClient::Answer> PromClient::Fetch(Connection* connection, const std::string& promql,
                                             std::optional<double> at_unix_seconds) {
  std::vector<std::pair<std::string, std::string>> params{{"query", promql}};
  if (at_unix_seconds) params.emplace_back("time", fmt::format("{:.3f}", *at_unix_seconds));
  return Post(connection, "/api/v1/query", params);
}

void PromClient::LimitTotalTime(std::chrono::milliseconds budget) {
  total_deadline_ = RealClock()->SteadyNow() + budget;
}

Result<PromClient::Answer> PromClient::Post(Connection* connection, const std::string& path,
                                            const std::vector<std::pair<std::string, std::string>>& params) {
  httplib::Request request;
  request.method = "POST";
  request.path = path_prefix_ + path;
  httplib::Params form(params.begin(), params.end());
  request.body = httplib::detail::params_to_query_str(form);
  request.set_header("Content-Type", "application/x-www-form-urlencoded");
  // Every answer through the one bounded client: its size, the whole
  // exchange's time and its nesting capped (a hostile or broken server
  // can cost neither the agent's memory nor its console's answer).
  http::FetchLimits limits;
  limits.max_body_bytes = settings_->max_answer_bytes;
  limits.deadline = settings_->timeout;
  limits.what = fmt::format("prometheus {}", options_.url);
  limits.named_timeout = settings_->timeout;
  limits.shared = bytes_held_;
  limits.max_shared_bytes = 2 * settings_->max_answer_bytes;
  limits.spare_bytes = kVectorAnswerPadding;
  if (total_deadline_) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*total_deadline_ - RealClock()->SteadyNow());
    if (left.count() <= 0) {
      return Status::DeadlineExceeded(fmt::format("{}: no complete reading within the timeout", limits.what));
    }
    limits.deadline = std::min(limits.deadline, left);
  }
  Result<http::FetchedAnswer> r = http::Fetch(&connection->client, std::move(request), limits);
  if (!r.ok()) return r.status();
  return Answer{r.value().status, std::move(r.value().body), std::move(r.value().held)};
}

Result<QueryResult> PromClient::Query(const std::string& promql, std::optional<double> at_unix_seconds) {
  Result<Answer> a = Fetch(connection_.get(), promql, at_unix_seconds);
  if (!a.ok()) return a.status();
  return DecodeQueryAnswer(a.value().body, a.value().http_status, fmt::format("prometheus {}", options_.url));
}

Result<std::vector<QueryResult>> PromClient::QueryAll(const std::vector<std::string>& promqls,
                                                      std::optional<double> at_unix_seconds) {
  std::vector<Result<QueryResult>> out = QueryEach(promqls, at_unix_seconds);
  std::vector<QueryResult> decoded;
  decoded.reserve(out.size());
  for (Result<QueryResult>& one : out) {
    if (!one.ok()) return one.status();
    decoded.push_back(std::move(one).value());
  }
  return decoded;
}

std::vector<Result<QueryResult>> PromClient::QueryEach(const std::vector<std::string>& promqls,
                                                       std::optional<double> at_unix_seconds) {
  std::vector<Result<QueryResult>> out(promqls.size(), Result<QueryResult>(Status::Unavailable("not asked")));
  QueryEachInTurn(promqls, at_unix_seconds,
                  [&out](size_t i, Result<QueryResult> answer) { out[i] = std::move(answer); });
  return out;
}

void PromClient::QueryEachInTurn(const std::vector<std::string>& promqls,
                                 std::optional<double> at_unix_seconds, const TakeAnswer& take) {
  // Fetched by a few workers at once, each on a connection of its own (the
  // first on this client's): fewer than Prometheus' default
  // --query.max-concurrency (20), so the server runs them all in parallel.
  // A worker decodes the answer it fetched and hands it over while the
  // others wait on the server; one at a time (a lock), so that at most one
  // answer's document is in memory beside the bodies not yet decoded.
  constexpr size_t kWorkers = 8;
  std::atomic<size_t> next{0};
  std::mutex taking;
  const std::string what = fmt::format("prometheus {}", options_.url);
  auto work = [&](Connection* connection) {
    for (size_t i = next++; i < promqls.size(); i = next++) {
      Result<Answer> body = Fetch(connection, promqls[i], at_unix_seconds);
      std::lock_guard<std::mutex> hold(taking);
      if (!body.ok()) {
        take(i, body.status());
        continue;
      }
      Result<QueryResult> decoded = DecodeQueryAnswer(body.value().body, body.value().http_status, what);
      body = Status::Unavailable("taken");  // Its bytes freed before the caller folds the answer.
      take(i, std::move(decoded));
    }
  };
  std::vector<std::thread> workers;
  for (size_t w = 1; w < std::min(kWorkers, promqls.size()); ++w) {
    workers.emplace_back([&] {
      Connection sibling(*settings_);
      work(&sibling);
    });
  }
  work(connection_.get());
  for (std::thread& t : workers) t.join();
}

namespace {

// The answer's "data" once its status, HTTP code and error are checked;
// its warnings and partial flag into `warnings` and `is_partial`.
Result<json> AnswerData(const std::string& body, int http_status, const std::string& what,
                        std::vector<std::string>* warnings, bool* is_partial) {
  json answer = json::parse(body, nullptr, false);
  if (!answer.is_object()) {
    if (http_status >= 500 || http_status == 0) {
      return Status::Unavailable(fmt::format("{}: HTTP {}", what, http_status));
    }
    if (http_status == 401 || http_status == 403) {
      return Status::PermissionDenied(fmt::format("{}: HTTP {}: check the credentials", what, http_status));
    }
    return Status::Corruption(fmt::format("{}: HTTP {}: not a Prometheus API answer", what, http_status));
  }
  if (StringAt(answer, "status") != "success") {
    std::string type = StringAt(answer, "errorType");
    std::string error = StringAt(answer, "error", "no error given");
    std::string text = fmt::format("{}: {}{}{}", what, type, type.empty() ? "" : ": ", error);
    // Prometheus' words for its limits, Thanos' and Mimir's ("limit",
    // "exceeded"), and VictoriaMetrics' ("cannot select more than
    // -search.maxSamplesPerQuery").
    bool is_limit = type == "timeout" || error.find("too many samples") != std::string::npos ||
                    error.find("limit") != std::string::npos || error.find("exceeded") != std::string::npos ||
                    error.find("cannot select more than") != std::string::npos;
    if (is_limit) return Status::ResourceExhausted(text, "ask for less: a shorter range or fewer nodes");
    if (http_status >= 500) return Status::Unavailable(text);
    return Status::InvalidArgument(text);
  }
  if (answer.contains("warnings") && answer["warnings"].is_array()) {
    for (const json& w : answer["warnings"]) {
      if (w.is_string()) warnings->push_back(w.get<std::string>());
    }
  }
  *is_partial = TrueAt(answer, "isPartial") || TrueAt(answer, "partial_response");
  if (!answer.contains("data") || !answer["data"].is_object()) return Status::Corruption(what + ": no data");
  *is_partial = *is_partial || TrueAt(answer["data"], "isPartial");
  return std::move(answer["data"]);  // Not a copy: a large fleet's answer is tens of megabytes parsed.
}

}  // namespace

Result<QueryResult> DecodeQueryAnswer(const std::string& body, int http_status, const std::string& what) {
  // The common answer, read as it is parsed; anything else (refusals,
  // scalars, malformed answers) the slow way, which says what is wrong.
  if (http_status == 200) {
    if (std::optional<QueryResult> fast = DecodeVectorAnswer(body)) return std::move(*fast);
  }
  QueryResult out;
  Result<json> data = AnswerData(body, http_status, what, &out.warnings, &out.is_partial);
  if (!data.ok()) return data.status();
  std::string type = StringAt(data.value(), "resultType");
  const json& result = data.value().contains("result") ? data.value()["result"] : json();
  if (type == "scalar" || type == "string") {
    json item = {{"value", result}};
    Result<Sample> s = DecodeSample(item, what);
    if (!s.ok()) return s.status();
    out.samples.push_back(std::move(s).value());
    return out;
  }
  if (type != "vector")
    return Status::InvalidArgument(fmt::format("{}: a {} answer; expected an instant vector", what, type));
  if (!result.is_array()) return Status::Corruption(what + ": the result is not a list");
  for (const json& item : result) {
    Result<Sample> s = DecodeSample(item, what);
    if (!s.ok()) return s.status();
    out.samples.push_back(std::move(s).value());
  }
  return out;
}

Result<std::vector<std::map<std::string, std::string>>> DecodeSeriesAnswer(const std::string& body,
                                                                           int http_status,
                                                                           const std::string& what) {
  json answer = json::parse(body, nullptr, false);
  if (!answer.is_object() || StringAt(answer, "status") != "success") {
    std::vector<std::string> warnings;
    bool is_partial = false;
    Result<json> refused = AnswerData(body, http_status, what, &warnings, &is_partial);  // Says why.
    if (!refused.ok()) return refused.status();
  }
  if (!answer.contains("data") || !answer["data"].is_array()) {
    return Status::Corruption(what + ": the series answer is not a list");
  }
  std::vector<std::map<std::string, std::string>> out;
  for (const json& item : answer["data"]) {
    if (!item.is_object()) return Status::Corruption(what + ": a series that is not a label set");
    std::map<std::string, std::string>& labels = out.emplace_back();
    for (const auto& [key, value] : item.items()) {
      if (value.is_string()) labels.insert_or_assign(key, value.get<std::string>());
    }
  }
  return out;
}

Result<RangeResult> DecodeRangeAnswer(const std::string& body, int http_status, const std::string& what) {
  RangeResult out;
  Result<json> data = AnswerData(body, http_status, what, &out.warnings, &out.is_partial);
  if (!data.ok()) return data.status();
  if (StringAt(data.value(), "resultType") != "matrix") {
    return Status::InvalidArgument(fmt::format("{}: expected a range (matrix) answer", what));
  }
  const json& result = data.value().contains("result") ? data.value()["result"] : json();
  if (!result.is_array()) return Status::Corruption(what + ": the result is not a list");
  for (const json& item : result) {
    Series series;
    if (!item.is_object() || !item.contains("values") || !item["values"].is_array()) {
      return Status::Corruption(fmt::format("{}: a series without values", what));
    }
    ReadLabels(item, &series.labels);
    for (const json& point : item["values"]) {
      if (!point.is_array() || point.size() != 2)
        return Status::Corruption(fmt::format("{}: a point without [time, value]", what));
      series.points.emplace_back(ParseValue(point[0]), ParseValue(point[1]));
    }
    out.series.push_back(std::move(series));
  }
  return out;
}

std::string QuoteLabelValue(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string RegexLiteral(const std::string& value) {
  std::string out;
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x80 || std::isalnum(u) != 0 || c == '_') {
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace tarmac::prom
