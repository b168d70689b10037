// SPDX-License-Identifier: Apache-2.0
//
// Time series out of the store for `tarmac history` and `tarmac export`,
// read from the tier that fits the step: raw samples (and the minute in
// progress) for steps under a minute, 1-minute rollups under an hour,
// 1-hour rollups above. Values in a step are averaged.
//
// Thread safety: one thread per Db.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

struct HistoryRequest {
  std::optional<std::string> gpu;    // Index ("3") or UUID; empty: every GPU.
  std::vector<std::string> metrics;  // Names from MetricNames(); empty: all.
  int64_t since_t = 0;               // Unix seconds, inclusive.
  int64_t until_t = 0;               // Exclusive.
  int64_t step_seconds = 60;
};

struct HistoryRow {
  int64_t t = 0;  // Start of the step.
  int gpu_index = 0;
  std::string uuid;
  std::vector<std::optional<double>> values;  // One per metric.
};

struct HistoryResult {
  std::string tier;                  // "raw", "1m" or "1h".
  std::vector<std::string> columns;  // With units: "utilization_percent".
  std::vector<HistoryRow> rows;      // By time, then GPU index.
};

// "utilization", "memory", "power", "temperature", "sm_clock",
// "memory_utilization".
const std::vector<std::string>& MetricNames();

// One row as `tarmac history --format json` writes it: t, gpu, uuid and
// each column read in the step ("utilization_percent": 41.5).
nlohmann::json HistoryRowToJson(const HistoryResult& result, const HistoryRow& row);
// {"tier", "rows": [...]}: the JSON of `tarmac history` and /api/v1/history.
nlohmann::json HistoryToJson(const HistoryResult& result);

// kInvalidArgument for an unknown metric or GPU, or an empty range;
// kNotFound for a GPU the store never saw.
Result<HistoryResult> QueryHistory(Db* db, const HistoryRequest& request);

}  // namespace tarmac::store
