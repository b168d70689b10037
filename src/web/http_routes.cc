// SPDX-License-Identifier: Apache-2.0
#include "web/http_routes.h"

#include <fmt/format.h>

#include <atomic>

#include "common/mutex.h"
#include "metrics/exposition.h"
#include "metrics/node_render.h"
#include "metrics/page_cache.h"
#include "metrics/render.h"
#include "node/node_json.h"

namespace tarmac::web {
namespace {

// Why the agent is not healthy, or empty when it is: the last sample is
// older than `stale_after`, the driver is gone, or a GPU cannot be read.
std::string Unhealthy(const node::Snapshot& snapshot, std::chrono::steady_clock::duration age,
                      std::chrono::milliseconds stale_after) {
  if (age > stale_after) {
    return fmt::format("stale: the last sample is {} ms old",
                       std::chrono::duration_cast<std::chrono::milliseconds>(age).count());
  }
  if (!snapshot.node_view.backend_error.empty()) return "driver: " + snapshot.node_view.backend_error;
  std::string problems;
  for (const node::GpuView& g : snapshot.node_view.gpus) {
    if (g.sample.health == node::GpuHealth::kOk) continue;
    problems += fmt::format("{}gpu {} {}: {}", problems.empty() ? "" : "; ", g.info.index,
                            node::GpuHealthName(g.sample.health), g.sample.error);
  }
  return problems;
}

// The lease families' text for the figures last seen: scrapes render it
// again only when a figure changed, else share the last text.
class LeaseFamiliesText {
 public:
  std::shared_ptr<const std::string> For(const metrics::AgentFigures& figures, const std::string& hostname) {
    MutexLock lock(&mu_);
    if (text_ == nullptr || !(figures == figures_) || hostname != hostname_) {
      text_ = std::make_shared<const std::string>(metrics::RenderLeaseFamilies(figures, hostname));
      figures_ = figures;
      hostname_ = hostname;
    }
    return text_;
  }

 private:
  Mutex mu_;
  metrics::AgentFigures figures_ GUARDED_BY(mu_);
  std::string hostname_ GUARDED_BY(mu_);
  std::shared_ptr<const std::string> text_ GUARDED_BY(mu_);
};

}  // namespace

Status AddHttpRoutes(http::RouteTable* routes, const config::Config& config, const std::string& version,
                     sampler::Sampler* sampler, metrics::NodeCounters* counters, Clock* clock,
                     HttpRouteHooks hooks, std::shared_ptr<metrics::PageCache>* pages_out) {
  std::function<std::string()> problems = std::move(hooks.problems);
  std::function<metrics::AgentFigures()> leases = std::move(hooks.agent_figures);
  std::function<std::string()> findings = std::move(hooks.findings);
  std::function<std::shared_ptr<const node::LeaseMarks>()> lease_marks = std::move(hooks.lease_marks);
  metrics::RenderOptions render = config.metrics;
  render.currency = config.report.currency;
  render.version = version;
  auto pages =
      std::make_shared<metrics::PageCache>([sampler, counters, render, lease_marks](const node::Snapshot& s) {
        // Drained GPUs are to drain in tarmac_gpu_health (leases/gpu_drains.h).
        std::shared_ptr<const node::LeaseMarks> marks = lease_marks ? lease_marks() : nullptr;
        if (marks == nullptr || marks->drains.empty())
          return metrics::RenderMetrics(s, sampler->stats(), counters->Get(), render);
        node::Snapshot drained = s;
        for (node::GpuView& g : drained.node_view.gpus) {
          if (auto it = marks->drains.find(g.info.uuid); it != marks->drains.end()) g.drained = it->second;
        }
        return metrics::RenderMetrics(drained, sampler->stats(), counters->Get(), render);
      });
  if (pages_out != nullptr) *pages_out = pages;
  auto previous_us = std::make_shared<std::atomic<int64_t>>(0);
  auto lease_text = std::make_shared<LeaseFamiliesText>();

  Status s =
      routes->Add("/metrics", [sampler, pages, render, previous_us, clock, leases, lease_text, lease_marks] {
        std::chrono::steady_clock::time_point start = clock->SteadyNow();
        std::shared_ptr<const node::Snapshot> snapshot = sampler->Latest();
        std::shared_ptr<const std::string> page = pages->Page(snapshot);
        std::string tail =
            metrics::RenderScrapeDuration(*snapshot, render, static_cast<double>(previous_us->load()) / 1e6);
        const std::string& host = render.hostname.empty() ? snapshot->node_view.hostname : render.hostname;
        if (leases) tail += *lease_text->For(leases(), host);
        if (std::shared_ptr<const node::LeaseMarks> marks = lease_marks ? lease_marks() : nullptr) {
          tail += metrics::RenderLeaseMarks(*marks, snapshot->node_view, host);
          tail += metrics::RenderNodeLeased(*marks, snapshot->node_view, host);
        }
        previous_us->store(
            std::chrono::duration_cast<std::chrono::microseconds>(clock->SteadyNow() - start).count());
        // The page is shared with every scrape of this sample, not copied.
        return http::Response{200, metrics::kContentType, std::move(tail), std::move(page)};
      });
  std::chrono::milliseconds stale_after = 3 * config.sampler.fast_interval + std::chrono::seconds(2);
  if (s.ok()) {
    s = routes->Add("/health", [sampler, clock, stale_after, problems, findings] {
      std::shared_ptr<const node::Snapshot> snapshot = sampler->Latest();
      std::string reason = Unhealthy(*snapshot, clock->SteadyNow() - snapshot->taken_at_steady, stale_after);
      std::string more = problems ? problems() : std::string();
      if (!more.empty()) reason += (reason.empty() ? "" : "; ") + more;
      std::string found = findings ? findings() : std::string();
      std::string tail = found.empty() ? std::string() : found + "\n";
      return reason.empty() ? http::Response{200, "text/plain", "ok\n" + tail}
                            : http::Response{503, "text/plain", reason + "\n" + tail};
    });
  }
  return s;
}

}  // namespace tarmac::web
