// SPDX-License-Identifier: Apache-2.0
#include "web/web_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <tuple>

#include "common/json_fields.h"
#include "common/split.h"
#include "common/time_spec.h"
#include "http/gzip.h"
#include "http/peer_identity.h"
#include "report/report.h"
#include "report/report_render.h"
#include "store/event_query.h"
#include "store/history_query.h"
#include "store/schema.h"
#include "web/console_page.h"
#include "web/stream_feed.h"
#include "web/web_answer.h"
#include "web/web_redaction.h"

namespace tarmac::web {
namespace {

using nlohmann::json;

// The socket methods served over HTTP: each only reads.
constexpr const char* kReadMethods[] = {"status", "leases", "queue", "events", "zombies", "backfill.list"};

// The HTTP status for a method's error code.
int HttpStatusOf(const std::string& code) {
  if (code == ipc::kErrorBadRequest) return 400;
  if (code == ipc::kErrorNotFound) return 404;
  if (code == ipc::kErrorPermissionDenied) return 403;
  if (code == ipc::kErrorUnavailable || code == ipc::kErrorBusy || code == ipc::kErrorStorage) return 503;
  return 500;
}

// The `result` of a method's answer (or its error), as the socket gives it.
Result<json> Ask(const ipc::MethodTable& methods, const std::string& method, json params) {
  ipc::Request request;
  request.method = method;
  request.params = std::move(params);
  std::optional<std::string> line = methods.Dispatch(request, ipc::PeerCredentials{0, kWebUid, kWebUid});
  if (!line) return Status::Internal(fmt::format("{}: answered later", method));
  json answer = json::parse(*line, nullptr, false);
  if (!answer.is_object()) return Status::Internal(fmt::format("{}: a malformed answer", method));
  auto ok = answer.find("ok");
  auto result = answer.find("result");
  if (ok != answer.end() && *ok == true && result != answer.end()) return *result;
  return answer;  // The error object, whole.
}

// The leases and queue, {"leases": [...], "queue": [...]}, from the lease
// service's typed listing (encoded once, here) when the agent gives one.
Result<json> LeaseListingForWeb(const WebRouteHooks& hooks, Clock* clock) {
  if (hooks.lease_listing) {
    return sched::LeaseListingToJson(hooks.lease_listing(), {clock->SteadyNow(), clock->WallNow()});
  }
  Result<json> leases = Ask(*hooks.methods, "leases", json::object());
  Result<json> queue = Ask(*hooks.methods, "queue", json::object());
  if (!leases.ok()) return leases.status();
  if (!queue.ok()) return queue.status();
  auto leases_list = leases.value().find("leases");
  auto queue_list = queue.value().find("queue");
  if (leases_list == leases.value().end() || queue_list == queue.value().end())
    return Status::Internal("leases, queue: an answer without its list");
  return json{{"leases", *leases_list}, {"queue", *queue_list}};
}

// A read method's result as the web shows it: status, leases and queue
// (without params) from the agent's typed sources, the others through the
// method table.
Result<json> AskForWeb(const WebRouteHooks& hooks, const std::string& method, json params, Clock* clock) {
  Result<json> got = Status::Internal("unasked");
  if (method == "status" && params.empty() && hooks.status) {
    got = hooks.status();
  } else if ((method == "leases" || method == "queue") && params.empty() && hooks.lease_listing) {
    Result<json> listing = LeaseListingForWeb(hooks, clock);
    got = listing.ok() ? Result<json>(json{{method, std::move(listing.value()[method])}}) : listing;
  } else {
    got = Ask(*hooks.methods, method, std::move(params));
  }
  if (got.ok() && !hooks.web.show_command_lines) DropCommandLines(&got.value());
  return got;
}

// Lease journal events for the stream: from the lease service when the
// agent gives it, else through the method table.
Result<std::vector<store::LeaseEvent>> EventsForWeb(const WebRouteHooks& hooks, int64_t after, int64_t limit,
                                                    bool newest) {
  if (hooks.lease_events) return hooks.lease_events(after, limit, newest);
  json params = {{"after", after}, {"limit", limit}};
  if (newest) params["newest"] = true;
  Result<json> got = Ask(*hooks.methods, "events", std::move(params));
  if (!got.ok()) return got.status();
  return store::LeaseEventsFromJson(got.value());
}

http::Response AnswerMethod(const WebRouteHooks& hooks, const std::string& method, const http::Request& asked,
                            Clock* clock) {
  Result<json> got = AskForWeb(hooks, method, ParamsFromQuery(asked.params), clock);
  if (!got.ok()) return Refusal(500, ipc::kErrorInternal, got.status().message());
  const json& j = got.value();
  if (j.contains("ok") && j.contains("error")) {
    std::string code = ipc::kErrorInternal;
    std::string message;
    JsonFields error = JsonFields(j, "answer", JsonFields::kSkipWrongTypes).Object("error");
    error.Optional("code", &code);
    error.Optional("message", &message);
    return Refusal(HttpStatusOf(code), code, message);
  }
  return JsonAnswer(200, j);
}

http::Response AnswerHistory(const WebRouteHooks& hooks, const http::Request& asked, Clock* clock) {
  if (hooks.store_path.empty())
    return Refusal(404, ipc::kErrorNotFound, "the agent keeps no history ([store])");
  Result<std::pair<int64_t, int64_t>> range = RangeOf(asked, clock, "1h");
  if (!range.ok()) return StatusRefusal(range.status());
  json points_param = ParamsFromQuery({{"points", asked.Param("points", "600")}})["points"];
  if (!points_param.is_number_integer() || points_param.get<int64_t>() < 1 ||
      points_param.get<int64_t>() > kMaxHistoryPoints) {
    return Refusal(400, ipc::kErrorBadRequest, fmt::format("points: expected 1 to {}", kMaxHistoryPoints));
  }
  store::HistoryRequest request;
  request.since_t = range.value().first;
  request.until_t = range.value().second;
  if (std::string gpu = asked.Param("gpu"); !gpu.empty()) request.gpu = gpu;
  request.metrics = SplitCommas(asked.Param("metrics"));
  // Downsampled here: a step that leaves at most `points` per series.
  int64_t points = points_param.get<int64_t>();
  int64_t span = request.until_t - 1 - request.since_t;  // As asked: until is inclusive.
  request.step_seconds = std::max<int64_t>(1, (span + points - 1) / points);
  Result<std::unique_ptr<store::Db>> db = store::OpenForReading(hooks.store_path);
  if (!db.ok()) return StatusRefusal(db.status());
  Result<store::HistoryResult> result = store::QueryHistory(db.value().get(), request);
  if (!result.ok()) return StatusRefusal(result.status());
  json j = store::HistoryToJson(result.value());
  j["step_seconds"] = request.step_seconds;
  j["columns"] = result.value().columns;
  // What happened in the range, for the time axis: Xids, throttling,
  // preemptions, the GPU lost, the driver and agent.
  Result<std::vector<store::StoredEvent>> events = store::QueryEvents(
      db.value().get(), {request.gpu, request.since_t, request.until_t, kMaxHistoryEvents});
  if (!events.ok()) return StatusRefusal(events.status());
  j["events"] = json::array();
  for (const store::StoredEvent& e : events.value()) j["events"].push_back(store::StoredEventToJson(e));
  return JsonAnswer(200, j);
}

http::Response AnswerReport(const WebRouteHooks& hooks, const http::Request& asked, Clock* clock) {
  if (hooks.store_path.empty())
    return Refusal(404, ipc::kErrorNotFound, "the agent keeps no history ([store])");
  Result<std::pair<int64_t, int64_t>> range = RangeOf(asked, clock, "7d");
  if (!range.ok()) return StatusRefusal(range.status());
  report::ReportRequest request;
  request.since_t = range.value().first;
  request.until_t = range.value().second;
  if (!report::ParseGroupBy(asked.Param("by", "user"), &request.by)) {
    return Refusal(400, ipc::kErrorBadRequest,
                   fmt::format("by: expected one of {}", fmt::join(report::GroupByNames(), ", ")));
  }
  http::Response refusal;
  std::optional<std::string> format = ReportFormat(asked, &refusal);
  if (!format) return refusal;
  request.pricing = hooks.pricing;
  request.with_charts = *format != "csv";
  Result<std::unique_ptr<store::Db>> db = store::OpenForReading(hooks.store_path);
  if (!db.ok()) return StatusRefusal(db.status());
  Result<report::Report> built = report::BuildReport(db.value().get(), request);
  if (!built.ok()) return StatusRefusal(built.status());
  // Its CSV and HTML are not JSON the routes' redaction could read.
  if (!hooks.web.show_command_lines) DropCommandLines(&built.value());
  const report::Report& r = built.value();
  return ReportAnswer(*format,
                      *format == "csv"    ? report::RenderCsv(r)
                      : *format == "html" ? report::RenderHtml(r)
                                          : report::RenderJson(r),
                      "tarmac-report.csv");
}

// After every sample: the shared batch (status, leases and queue), and the
// lease events since the stream's last (the batch's when it follows on, else
// asked for this stream); a comment every 15 s when nothing came, to find a
// client that left.
void Stream(const WebRouteHooks& hooks, StreamFeed* feed, Clock* clock, http::StreamSink& sink) {
  // Reconnect 2 s after the agent goes away.
  if (!sink.Write("retry: 2000\n\n")) return;
  int64_t sequence = -1;
  // Only events after the stream began.
  int64_t last_event = feed->Latest()->events_upto;
  auto quiet_since = clock->SteadyNow();
  while (sink.is_open()) {
    // Woken by the agent's next sample; at least once a second, to notice
    // the server stopping.
    std::shared_ptr<const StreamBatch> batch = feed->WaitNewer(sequence, std::chrono::seconds(1));
    if (batch == nullptr) {
      if (clock->SteadyNow() - quiet_since > std::chrono::seconds(15)) {
        if (!sink.Write(": still here\n\n")) return;
        quiet_since = clock->SteadyNow();
      }
      continue;
    }
    sequence = batch->sequence;
    quiet_since = clock->SteadyNow();
    if (!sink.Write(batch->text)) return;
    std::string events;
    if (last_event >= 0 && batch->events_after == last_event) {
      events = batch->events_text;
    } else if (last_event >= 0 && batch->events_upto > last_event) {
      // This stream missed a batch (it was slow): its own question.
      Result<std::vector<store::LeaseEvent>> asked = EventsForWeb(hooks, last_event, 1000, false);
      if (asked.ok() && !asked.value().empty()) {
        json list = json::array();
        for (const store::LeaseEvent& e : asked.value()) list.push_back(store::LeaseEventToJson(e));
        events = StreamFeed::Event("events", json{{"events", std::move(list)}});
      }
    }
    if (batch->events_upto >= 0) last_event = batch->events_upto;
    if (!events.empty() && !sink.Write(events)) return;
  }
}

// A strong ETag of an asset: FNV-1a of its bytes.
std::string ETagOf(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return fmt::format("\"{:016x}\"", hash);
}

}  // namespace

std::string ApiPathOf(const std::string& method) {
  return "/api/v1/" + (method == "backfill.list" ? std::string("backfill") : method);
}

json ParamsFromQuery(const std::map<std::string, std::string>& query) {
  json params = json::object();
  for (const auto& [key, value] : query) {
    bool is_integer = !value.empty() && value.size() <= 18 &&
                      value.find_first_not_of("0123456789", value[0] == '-' ? 1 : 0) == std::string::npos &&
                      value != "-";
    if (is_integer) {
      params[key] = std::stoll(value);
    } else if (value == "true" || value == "false") {
      params[key] = value == "true";
    } else {
      params[key] = value;
    }
  }
  return params;
}

namespace {

// One of the console's assets: compressed once here and sent compressed to
// every browser (they all accept gzip), plain to a client that does not;
// kept for a year when asked for by its `version`, revalidated otherwise.
http::RouteTable::Handler ConsoleAsset(std::string type, std::string text, std::string version) {
  auto plain = std::make_shared<const std::string>(std::move(text));
  auto gzip = std::make_shared<const std::string>(http::Gzip(*plain));
  return [type = std::move(type), plain, gzip, etag = ETagOf(*plain),
          version = std::move(version)](const http::Request& asked) {
    bool is_fresh = asked.if_none_match == etag;
    bool is_gzip = !is_fresh && asked.accepts_gzip && !gzip->empty();
    http::Response r{is_fresh ? 304 : 200, type, is_fresh ? std::string() : is_gzip ? *gzip : *plain};
    r.is_gzip = is_gzip;
    // The page runs its own script only, talks to this agent only, and
    // is never framed.
    r.headers = {
        {"Content-Security-Policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' "
         "data:; "
         "frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"},
        {"X-Content-Type-Options", "nosniff"},
        {"Referrer-Policy", "no-referrer"},
        {"ETag", etag},
        {"Vary", "Accept-Encoding"},
        {"Cache-Control",
         !version.empty() && asked.Param("v") == version ? "max-age=31536000, immutable" : "no-cache"}};
    return r;
  };
}

// The console: its page, script modules and style, each compressed once.
Status AddConsoleRoutes(http::RouteTable* routes) {
  Status s = Status::OK();
  // Every asset is named by content: the modules by one hash over all of
  // them (console/NAME.js?v=HASH, in the page and in each module's imports,
  // the only change made to a module as it is served), the style by its
  // own. A browser keeps them (immutable) until an agent with other ones
  // serves a page naming new hashes; the page itself is revalidated (ETag)
  // on every load. The page preloads every module main.js needs to start,
  // so that a first visit fetches them at once instead of import by import.
  std::string all;
  for (const ConsoleModule& m : ConsoleModules()) all.append(m.name).append(m.text);
  const std::string script_version = ETagOf(all).substr(1, 16);
  const std::string style_version = ETagOf(ConsoleStyle()).substr(1, 16);
  const std::regex import_of(R"re(((?:from\s+|import\()"\./([a-z_]+\.js))")re");
  std::vector<std::tuple<std::string, const char*, std::string, std::string>> assets;
  std::map<std::string, std::vector<std::string>> static_imports;  // Module -> what it imports with `from`.
  for (const ConsoleModule& m : ConsoleModules()) {
    std::string text(m.text);
    // A module that imports nothing of ours (the vendored uPlot, 145 KB) is
    // served as it is: no regular expression over it at start-up.
    if (text.find("\"./") != std::string::npos) {
      for (std::sregex_iterator it(text.begin(), text.end(), import_of), end; it != end; ++it) {
        if ((*it)[1].str().rfind("from", 0) == 0)
          static_imports[std::string(m.name)].push_back((*it)[2].str());
      }
      text = std::regex_replace(text, import_of, "$1?v=" + script_version + "\"");
    }
    assets.emplace_back(fmt::format("/console/{}", m.name), "text/javascript; charset=utf-8", std::move(text),
                        script_version);
  }
  // What main.js needs before it runs, preloaded at once; the other views'
  // modules it imports later itself.
  std::set<std::string> needed;
  std::vector<std::string> next = static_imports["main.js"];
  while (!next.empty()) {
    std::string name = next.back();
    next.pop_back();
    if (!needed.insert(name).second) continue;
    next.insert(next.end(), static_imports[name].begin(), static_imports[name].end());
  }
  std::string preloads;
  for (const std::string& name : needed)
    preloads += fmt::format("<link rel=\"modulepreload\" href=\"console/{}?v={}\">\n", name, script_version);
  std::string page(ConsolePage());
  for (auto [name, version] :
       {std::pair{"console/main.js\"", script_version}, std::pair{"console.css\"", style_version}}) {
    size_t at = page.find(name);
    if (at != std::string::npos) page.insert(at + std::string_view(name).size() - 1, "?v=" + version);
  }
  if (size_t at = page.find("<script type=\"module\""); at != std::string::npos) page.insert(at, preloads);
  assets.emplace_back("/", "text/html; charset=utf-8", page, "");
  assets.emplace_back("/console.css", "text/css; charset=utf-8", std::string(ConsoleStyle()), style_version);
  for (auto& [path, type, text, version] : assets) {
    if (!s.ok()) return s;
    s = routes->Add(path, ConsoleAsset(type, std::move(text), version));
  }
  return s;
}

// The live stream (server-sent events), at most kMaxStreams at once and a
// client's share of them.
Status AddStreamRoute(http::RouteTable* routes, const std::shared_ptr<const WebRouteHooks>& shared,
                      Clock* clock, std::shared_ptr<StreamFeed>* feed_out) {
  Status s = Status::OK();
  sampler::Sampler* sampler = shared->sampler;
  StreamFeed::Sources sources;
  sources.sequence = [sampler] { return sampler->Latest()->sequence; };
  sources.status = [shared, clock] { return AskForWeb(*shared, "status", json::object(), clock); };
  sources.leases = [shared, clock]() -> Result<json> {
    Result<json> listing = LeaseListingForWeb(*shared, clock);
    if (listing.ok() && !shared->web.show_command_lines) DropCommandLines(&listing.value());
    return listing;
  };
  sources.events = [shared](int64_t after, int64_t limit, bool newest) {
    return EventsForWeb(*shared, after, limit, newest);
  };
  if (shared->status_text) {
    sources.status_text = [shared](std::string* out) {
      std::function<void(json*)> edit;
      if (!shared->web.show_command_lines) edit = [](json* j) { DropCommandLines(j); };
      shared->status_text(out, edit);
      return true;
    };
  }
  auto feed = std::make_shared<StreamFeed>(std::move(sources));
  if (feed_out != nullptr) *feed_out = feed;
  s = routes->Add("/api/v1/stream", [shared, clock, feed](const http::Request& asked) {
    // The slot is given back when the answer goes, streamed or not. One
    // client (a local user, or an address) holds at most its share.
    std::string client = http::ClientIdentity(asked.peer_address, asked.peer_port, asked.local_port);
    std::shared_ptr<void> slot = feed->Open(kMaxStreams, client, shared->web.max_streams_per_client);
    if (slot == nullptr) {
      return Refusal(503, ipc::kErrorBusy,
                     fmt::format("{} streams are open already, or {} of this client's ({}; [web] "
                                 "max_streams_per_client)",
                                 kMaxStreams, shared->web.max_streams_per_client, client));
    }
    http::Response r{200, "text/event-stream", ""};
    r.stream = [shared, feed, clock, slot](http::StreamSink& sink) {
      Stream(*shared, feed.get(), clock, sink);
    };
    return r;
  });
  return s;
}

}  // namespace

Status AddWebRoutes(http::RouteTable* routes, WebRouteHooks hooks, Clock* clock,
                    std::shared_ptr<StreamFeed>* feed_out) {
  auto shared = std::make_shared<const WebRouteHooks>(std::move(hooks));
  Status s = AddConsoleRoutes(routes);
  for (const char* method : kReadMethods) {
    if (!s.ok()) return s;
    s = routes->Add(ApiPathOf(method),
                    [shared, name = std::string(method), clock](const http::Request& asked) {
                      return AnswerMethod(*shared, name, asked, clock);
                    });
  }
  if (s.ok()) {
    s = routes->Add("/api/v1/doctor", [shared] {
      if (!shared->doctor) return Refusal(404, ipc::kErrorNotFound, "the doctor does not run in this agent");
      return JsonAnswer(200, shared->doctor());
    });
  }
  if (s.ok()) {
    s = routes->Add("/api/v1/history", [shared, clock](const http::Request& asked) {
      return AnswerHistory(*shared, asked, clock);
    });
  }
  if (s.ok()) {
    s = routes->Add("/api/v1/report", [shared, clock](const http::Request& asked) {
      return AnswerReport(*shared, asked, clock);
    });
  }
  if (s.ok()) s = AddStreamRoute(routes, shared, clock, feed_out);
  return s;
}

}  // namespace tarmac::web
