// SPDX-License-Identifier: Apache-2.0
//
// The web console and the JSON it reads (docs/web.md), served by the
// agent's HTTP endpoint (http/server.h):
//
//   /, /console.css,    the console: its page, style and script (ES
//   /console/NAME.js    modules), built in (ETag: a browser asks again
//                       with If-None-Match)
//   /api/v1/status      |
//   /api/v1/leases      |  the socket API's read methods, answered by the
//   /api/v1/queue       |  same method table: the same JSON for the same
//   /api/v1/events      |  question (the `result` of the socket's answer).
//   /api/v1/zombies     |  Query parameters are the method's params
//   /api/v1/backfill    |  (?after=40&limit=100).
//   /api/v1/doctor      the scheduled doctor's current findings
//   /api/v1/history     a GPU's series from the history store, at most
//                       `points` per series (downsampled on the server),
//                       and its stored events in the range
//   /api/v1/report      `tarmac report --format json` of any range
//   /api/v1/stream      server-sent events: `status`, `leases` and
//                       `events` after every sample
//
// Read-only: every method is asked as an unprivileged caller (uid
// kWebUid), so answers carry no lease token, and no route changes anything.
// Command lines are left out unless [web] show_command_lines: the stream
// here, every /api/ answer where the agent wraps its routes
// (agent/web_redaction.h).
//
// Thread safety: the routes may run on any number of threads; what the
// hooks point to must outlive them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "http/http_config.h"
#include "http/server.h"
#include "ipc/method_table.h"
#include "report/pricing.h"
#include "sampler/sampler.h"
#include "sched/lease_json.h"
#include "store/lease_event_json.h"
#include "web/stream_feed.h"

namespace tarmac::web {

// Who the console's requests are, to the method table: "nobody".
inline constexpr uid_t kWebUid = 65534;
// Streams served at once; one more is answered 503.
inline constexpr int kMaxStreams = 32;
// The most points a history series is cut to.
inline constexpr int kMaxHistoryPoints = 4000;
// The most stored events (the newest) /api/v1/history returns.
inline constexpr size_t kMaxHistoryEvents = 1000;

struct WebRouteHooks {
  const ipc::MethodTable* methods = nullptr;
  sampler::Sampler* sampler = nullptr;  // The latest sample's sequence.
  // The `status` result now, as the method answers it without params (the
  // stream's, without encoding and decoding a line); null: ask the method.
  std::function<nlohmann::json()> status;
  // The same as text, appended to `out` after `edit` changed each of its
  // parts (agent/snapshot_methods.h, AppendSnapshotStatus): what the stream
  // sends each sample. Null: the stream dumps `status`.
  std::function<void(std::string* out, const std::function<void(nlohmann::json*)>& edit)> status_text;
  // The leases and queue as the web sees them (a caller without privileges:
  // no tokens), typed; null: asked through the methods.
  std::function<sched::LeaseListing()> lease_listing;
  // Lease journal events (LeaseService::Events), typed; null: asked through
  // the methods.
  std::function<Result<std::vector<store::LeaseEvent>>(int64_t after, int64_t limit, bool newest)>
      lease_events;
  // {"runs", "findings": [...]} of the scheduled doctor; null: not running.
  std::function<nlohmann::json()> doctor;
  std::string store_path;  // The history; empty: none kept.
  report::Pricing pricing;
  http::WebOptions web;  // [web]
};

// `path` of the socket method `method` ("backfill.list" is
// /api/v1/backfill).
std::string ApiPathOf(const std::string& method);

// The method's params from a query's parameters: an integer where the
// value is one, true/false as booleans, else the string.
nlohmann::json ParamsFromQuery(const std::map<std::string, std::string>& query);

// `feed`, when not null, gets the streams' feed, for the agent to Notify
// after each sample (agent/stream_feed.h).
Status AddWebRoutes(http::RouteTable* routes, WebRouteHooks hooks, Clock* clock,
                    std::shared_ptr<StreamFeed>* feed = nullptr);

}  // namespace tarmac::web
