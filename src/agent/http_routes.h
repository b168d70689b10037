// SPDX-License-Identifier: Apache-2.0
//
// What the agent's HTTP endpoint answers (http/server.h serves it):
// /metrics from a page rendered once per snapshot (metrics/page_cache.h)
// plus the per-scrape duration, /health judged from the latest snapshot's
// age and health and from `problems` (state the agent cannot save), and
// /api/v1/status. Nothing here calls the driver.
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
#include "sampler/sampler.h"

namespace tarmac::agent {

// Adds /metrics, /health and /api/v1/status to `routes`. `problems` says
// what else makes the agent unhealthy (empty: nothing); `leases` gives the
// lease families of each scrape (null: none); `findings` what /health also
// names without being unhealthy for it (the doctor's critical findings).
// `pages`, when not null, gets the /metrics page cache, for the agent to
// prerender after each sample (metrics/page_cache.h).
Status AddHttpRoutes(http::RouteTable* routes, const config::Config& config, const std::string& version,
                     sampler::Sampler* sampler, metrics::FleetCounters* counters, Clock* clock,
                     std::function<std::string()> problems = nullptr,
                     std::function<metrics::LeaseFigures()> leases = nullptr,
                     std::function<std::string()> findings = nullptr,
                     std::shared_ptr<metrics::PageCache>* pages = nullptr);

}  // namespace tarmac::agent
