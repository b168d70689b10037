// SPDX-License-Identifier: Apache-2.0
//
// The fleet in the web console (docs/web.md "Fleet"): what `tarmac fleet`
// answers, read from the Prometheus named in [fleet] prometheus_url:
//
//   /api/v1/fleet          `tarmac fleet status --json`; ?node=REGEX,
//                          ?model=TEXT, ?idle=true, ?held_idle=true
//   /api/v1/fleet/idle     `tarmac fleet idle --json`
//   /api/v1/fleet/report   `tarmac fleet report` of ?since (7d), ?until,
//                          ?by (node), ?format=json|csv|html
//
// Without [fleet] prometheus_url each answers 404 and says so. Prometheus
// unreachable: 503 naming it and the error; a query over its limit: 429.
// However many pages ask, the agent asks Prometheus at most once per
// kFleetReuse for the fleet (the answer is shared), and one question at a
// time.
//
// Thread safety: the routes may run on any number of threads.
#pragma once

#include <chrono>

#include "common/clock.h"
#include "fleet/fleet_config.h"
#include "http/server.h"

namespace tarmac::web {

// How long one reading of the fleet answers every page.
inline constexpr std::chrono::seconds kFleetReuse{5};

Status AddFleetRoutes(http::RouteTable* routes, const fleet::FleetConfig& fleet, Clock* clock);

}  // namespace tarmac::web
