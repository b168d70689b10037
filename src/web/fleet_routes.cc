// SPDX-License-Identifier: Apache-2.0
#include "web/fleet_routes.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <regex>

#include "common/mutex.h"
#include "fleet/fleet_idle.h"
#include "fleet/fleet_read.h"
#include "fleet/fleet_render.h"
#include "fleet/fleet_report.h"
#include "ipc/method_table.h"
#include "prom/prom_client.h"
#include "web/web_answer.h"

namespace tarmac::web {
namespace {

using nlohmann::json;

// The Prometheus client and the last reading of the fleet, shared by the
// routes; one question to Prometheus at a time.
class NodeSource {
 public:
  NodeSource(prom::PromOptions options, Clock* clock) : options_(std::move(options)), clock_(clock) {}

  bool is_configured() const { return !options_.url.empty(); }

  // The fleet now: the last reading when it is younger than kFleetReuse.
  Result<std::shared_ptr<const fleet::FleetView>> View() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    // The last reading, or the last failure, when it is recent: a request
    // that waited for another's reading does not start one of its own, so
    // each answers within the timeout whatever Prometheus does.
    if (clock_->SteadyNow() - read_at_ < kFleetReuse) {
      if (view_ != nullptr) return view_;
      if (!failed_.ok()) return failed_;
    }
    Result<prom::PromClient*> client = Client();
    if (!client.ok()) return client.status();
    client.value()->LimitTotalTime(options_.timeout);
    Result<fleet::FleetView> read = fleet::ReadFleet(client.value());
    read_at_ = clock_->SteadyNow();
    if (!read.ok()) {
      view_ = nullptr;
      failed_ = read.status();
      return failed_;
    }
    failed_ = Status::OK();
    view_ = std::make_shared<const fleet::FleetView>(std::move(read).value());
    return view_;
  }

  Result<fleet::FleetReport> Report(int64_t since_unix, int64_t until_unix, fleet::ReportBy by,
                                    bool with_heatmap) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    Result<prom::PromClient*> client = Client();
    if (!client.ok()) return client.status();
    client.value()->LimitTotalTime(options_.timeout);
    return fleet::ReadFleetReport(client.value(), since_unix, until_unix, by, with_heatmap);
  }

 private:
  Result<prom::PromClient*> Client() REQUIRES(mu_) {
    if (client_ == nullptr) {
      Result<std::unique_ptr<prom::PromClient>> made = prom::PromClient::Make(options_);
      if (!made.ok()) return made.status();
      client_ = std::move(made).value();
    }
    return client_.get();
  }

  const prom::PromOptions options_;
  Clock* clock_;
  Mutex mu_;
  std::unique_ptr<prom::PromClient> client_ GUARDED_BY(mu_);
  std::shared_ptr<const fleet::FleetView> view_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point read_at_ GUARDED_BY(mu_);
  Status failed_ GUARDED_BY(mu_);  // The last reading's failure, if it failed.
};

// What the console gets when Prometheus did not give a usable answer: 504
// when its time ran out, 502 for anything else it did (unreachable, a
// refusal, an answer too large or malformed); 400 for a question the
// console asked wrongly.
http::Response UpstreamRefusal(const Status& s) {
  if (s.code() == StatusCode::kInvalidArgument) return StatusRefusal(s);
  if (s.code() == StatusCode::kDeadlineExceeded) return Refusal(504, ipc::kErrorUnavailable, s.ToString());
  return Refusal(502, ipc::kErrorUnavailable, s.ToString());
}

http::Response NotConfigured() {
  return Refusal(404, ipc::kErrorNotFound,
                 "the fleet view needs [fleet] prometheus_url in the agent's config (docs/web.md)");
}

http::Response AnswerStatus(NodeSource& source, const http::Request& asked) {
  fleet::FleetFilter filter;
  if (std::string node = asked.Param("node"); !node.empty()) {
    try {
      filter.node = std::regex(node, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Refusal(400, ipc::kErrorBadRequest,
                     fmt::format("node: '{}' is not a regular expression: {}", node, e.what()));
    }
  }
  filter.model = asked.Param("model");
  filter.idle_only = asked.Param("idle") == "true";
  filter.held_idle_only = asked.Param("held_idle") == "true";
  Result<std::shared_ptr<const fleet::FleetView>> view = source.View();
  if (!view.ok()) return UpstreamRefusal(view.status());
  return JsonAnswer(200, fleet::FleetToJson(fleet::Filter(*view.value(), filter)));
}

http::Response AnswerReport(NodeSource& source, const http::Request& asked, Clock* clock) {
  Result<std::pair<int64_t, int64_t>> range = RangeOf(asked, clock, "7d");
  if (!range.ok()) return StatusRefusal(range.status());
  fleet::ReportBy by = fleet::ReportBy::kNode;
  if (!fleet::ParseReportBy(asked.Param("by", "node"), &by)) {
    return Refusal(400, ipc::kErrorBadRequest,
                   "by: expected node, gpu, model, user, namespace, pod or slurm-job");
  }
  http::Response refusal;
  std::optional<std::string> format = ReportFormat(asked, &refusal);
  if (!format) return refusal;
  // The same range `tarmac fleet report` reads: until as given.
  Result<fleet::FleetReport> report =
      source.Report(range.value().first, range.value().second - 1, by, *format == "html");
  if (!report.ok()) return UpstreamRefusal(report.status());
  const fleet::FleetReport& r = report.value();
  return ReportAnswer(*format,
                      *format == "csv"    ? fleet::RenderReportCsv(r)
                      : *format == "html" ? fleet::RenderReportHtml(r)
                                          : fleet::ReportToJson(r).dump() + "\n",
                      "tarmac-fleet-report.csv");
}

}  // namespace

Status AddFleetRoutes(http::RouteTable* routes, const fleet::FleetConfig& fleet, Clock* clock) {
  auto source = std::make_shared<NodeSource>(fleet::PromOptionsOf(fleet), clock);
  Status s = routes->Add("/api/v1/fleet", [source](const http::Request& asked) {
    return source->is_configured() ? AnswerStatus(*source, asked) : NotConfigured();
  });
  if (s.ok()) {
    s = routes->Add("/api/v1/fleet/idle", [source] {
      if (!source->is_configured()) return NotConfigured();
      Result<std::shared_ptr<const fleet::FleetView>> view = source->View();
      if (!view.ok()) return UpstreamRefusal(view.status());
      return JsonAnswer(200, fleet::IdleToJson(*view.value()));
    });
  }
  if (s.ok()) {
    s = routes->Add("/api/v1/fleet/report", [source, clock](const http::Request& asked) {
      return source->is_configured() ? AnswerReport(*source, asked, clock) : NotConfigured();
    });
  }
  return s;
}

}  // namespace tarmac::web
