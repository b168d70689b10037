// SPDX-License-Identifier: Apache-2.0
//
// `tarmac fleet status` as text (every line within `width` columns) and as
// JSON (docs/fleet.md: base units; a reading a node did not report is
// absent). Pure.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cluster/cluster_view.h"

namespace tarmac::cluster {

std::string RenderClusterText(const ClusterView& view, size_t width);

nlohmann::json ClusterToJson(const ClusterView& view);

}  // namespace tarmac::cluster
