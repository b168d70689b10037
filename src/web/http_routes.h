// SPDX-License-Identifier: Apache-2.0
//
// What the agent's HTTP endpoint answers (http/server.h serves it):
// /metrics from a page rendered once per snapshot (metrics/page_cache.h)
// plus the per-scrape duration, /health judged from the latest snapshot's
// age and health and from `problems` (state the agent cannot save). The
// console and /api/v1/ are web_routes.h's. Nothing here calls the driver.
//
// Thread safety: the returned routes may run on any number of threads. The
// sampler, counters and clock must outlive them.
#pragma once

#include "common/clock.h"
#include "config/config.h"
#include "http/server.h"
#include "metrics/counters.h"
#include "metrics/page_cache.h"
#include "metrics/render.h"
#include "node/lease_marks.h"
#include "sampler/sampler.h"

namespace tarmac::web {

// What the routes ask the rest of the agent; each may be null.
struct HttpRouteHooks {
  // What else makes the agent unhealthy (empty: nothing).
  std::function<std::string()> problems;
  // The lease families of each scrape.
  std::function<metrics::AgentFigures()> agent_figures;
  // Who holds each GPU: /api/v1/status marks its GPUs with it.
  std::function<std::shared_ptr<const node::LeaseMarks>()> lease_marks;
  // What /health also names without being unhealthy for it (the doctor's
  // critical findings).
  std::function<std::string()> findings;
};

// Adds /metrics and /health to `routes`. `pages`, when not
// null, gets the /metrics page cache, for the agent to prerender after each
// sample (metrics/page_cache.h).
Status AddHttpRoutes(http::RouteTable* routes, const config::Config& config, const std::string& version,
                     sampler::Sampler* sampler, metrics::NodeCounters* counters, Clock* clock,
                     HttpRouteHooks hooks, std::shared_ptr<metrics::PageCache>* pages = nullptr);

}  // namespace tarmac::web
