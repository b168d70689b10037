// SPDX-License-Identifier: Apache-2.0
//
// The JSON form of a NodeView (`tarmac status --json`, and later the
// agent's /api/v1/status). Every reading is a number in base units (bytes,
// milliwatts, hertz, ratios 0..1); a field the GPU cannot report is absent,
// never zero or null. The schema is in docs/status-json.md. Pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "node/node_view.h"
#include "node/utilization_series.h"

namespace tarmac::node {

inline constexpr int kStatusJsonVersion = 1;

nlohmann::json StatusToJson(const NodeView& node_view);

// Its parts: every field but "gpus", and one GPU's object (the status's
// "gpus" is these in the node view's order). A writer that encodes one GPU at
// a time holds one GPU's tree at once instead of the whole node's.
nlohmann::json StatusHeaderToJson(const NodeView& node_view);
nlohmann::json GpuToJson(const GpuView& gpu);

// A GPU's "lease" object: id, user, kind ("normal" or "backfill"), revoking.
nlohmann::json GpuLeaseToJson(const GpuLease& lease);

// A GPU's "drained" object: by, reason, since_unix; and back (what it
// lacks is empty or 0).
nlohmann::json GpuDrainToJson(const GpuDrain& drain);
GpuDrain GpuDrainFromJson(const nlohmann::json& drain);

// A pod's object: namespace, name, container.
nlohmann::json PodToJson(const KubernetesNames& pod);

// A GPU's "mig_instances": each instance's identity (uuid, GPU and compute
// instance ids, profile), memory, engine activity, PIDs, idle holders, and
// its lease and pod when it has them.
nlohmann::json MigInstancesToJson(const GpuView& gpu);

}  // namespace tarmac::node

namespace tarmac::node {

// The inverse of StatusToJson, for clients that read the agent's snapshot:
// every field StatusToJson writes is read back (marks are recomputed from the
// readings). kCorruption when the document is not a status object.
Result<NodeView> NodeFromJson(const nlohmann::json& j);

// Each GPU's utilization series in a status asked with series_seconds, by
// GPU index; a GPU without one (or with a malformed one) has none.
std::map<int, UtilizationSeries> UtilizationSeriesFromStatus(const nlohmann::json& status);

}  // namespace tarmac::node
