// SPDX-License-Identifier: Apache-2.0
//
// The metrics page's keys of [http] in the agent's config (defaults in
// RenderOptions): hostname (the host label; empty: the host's name),
// dcgm_compatible (also serve dcgm-exporter's families), dcgm_hostname_label
// ("Hostname", or "hostname" as dcgm-exporter >= 4.8.3 names it) and
// max_process_series (0 to 100000).
#pragma once

#include "common/config_section.h"
#include "metrics/render.h"

namespace tarmac::metrics {

void ReadMetricsKeys(ConfigSection& section, RenderOptions* out);

}  // namespace tarmac::metrics
