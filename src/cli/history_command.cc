// SPDX-License-Identifier: Apache-2.0
#include "cli/history_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "common/split.h"
#include "common/units.h"
#include "nvidia/vendor_facts.h"
#include "report/report_render.h"
#include "store/history_query.h"

namespace tarmac::cli {
namespace {

// About 300 points over the range, rounded to a step users expect.
int64_t DefaultStep(int64_t seconds) {
  for (int64_t step : {1, 5, 10, 30, 60, 300, 600, 1800, 3600, 21600, 86400}) {
    if (seconds / step <= 300) return step;
  }
  return 86400;
}

std::string Value(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : std::string(); }

void Print(const store::HistoryResult& r, const std::string& format, int64_t step_seconds) {
  if (format == "json" || format == "jsonl") {
    if (format == "json") {
      std::puts(store::HistoryToJson(r).dump(2).c_str());
      return;
    }
    for (const store::HistoryRow& row : r.rows) std::puts(store::HistoryRowToJson(r, row).dump().c_str());
    return;
  }
  if (format == "csv") {
    std::string header = "time,gpu,uuid";
    for (const std::string& c : r.columns) header += "," + c;
    std::puts(header.c_str());
    for (const store::HistoryRow& row : r.rows) {
      std::string line = fmt::format("{},{},{}", row.t, row.gpu_index, row.uuid);
      for (const std::optional<double>& v : row.values) line += "," + Value(v);
      std::puts(line.c_str());
    }
    return;
  }
  int time_width = step_seconds >= 60 ? 21 : 24;
  // A MIG instance is a device of its own: its GPU's index and its UUID.
  auto device = [](const store::HistoryRow& row) {
    return nvidia::IsMigUuid(row.uuid) ? fmt::format("{} {}", row.gpu_index, row.uuid.substr(0, 12))
                                       : std::to_string(row.gpu_index);
  };
  size_t gpu_width = 4;
  for (const store::HistoryRow& row : r.rows) gpu_width = std::max(gpu_width, device(row).size() + 1);
  std::string header = fmt::format("{:<{}}{:>{}}", "TIME", time_width, "GPU", gpu_width);
  for (const std::string& c : r.columns) header += fmt::format("{:>28}", c);
  std::puts(header.c_str());
  for (const store::HistoryRow& row : r.rows) {
    std::string line = fmt::format("{:<{}}{:>{}}", report::FormatTime(row.t, step_seconds < 60), time_width,
                                   device(row), gpu_width);
    for (const std::optional<double>& v : row.values) line += fmt::format("{:>28}", v ? Value(v) : "-");
    std::puts(line.c_str());
  }
  if (r.rows.empty()) std::fprintf(stderr, "tarmac: history: no samples in this range\n");
}

}  // namespace

CLI::App* AddHistoryCommand(CLI::App* app, HistoryOptions* o) {
  CLI::App* cmd = app->add_subcommand("history", "Time series of GPU readings from the agent's history");
  cmd->add_option("--gpu", o->gpu, "One GPU, by index or UUID (default: all)");
  cmd->add_option("--metric", o->metrics,
                  "Comma-separated: utilization, memory, power, temperature, sm_clock, memory_utilization "
                  "(default: all)");
  cmd->add_option("--since", o->since, "Start: a duration ago (6h, 7d), a date, or @UNIX")->default_str("6h");
  cmd->add_option("--until", o->until, "End (inclusive)")->default_str("now");
  cmd->add_option("--step", o->step,
                  "Bucket width (10s, 1m, 1h); under 1m reads raw samples, under 1h the 1-minute rollups "
                  "(default: about 300 points)");
  cmd->add_option("--format", o->format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->default_str("table");
  AddStoreAccessOptions(cmd, &o->store);
  return cmd;
}

int RunHistory(const HistoryOptions& o, Clock* clock) {
  Result<TimeRange> range = ParseRange(o.since, o.until, clock);
  if (!range.ok()) return ExitWith(range.status());
  store::HistoryRequest request;
  request.since_t = range.value().since_t;
  request.until_t = range.value().until_t;
  if (!o.gpu.empty()) request.gpu = o.gpu;
  request.metrics = SplitCommas(o.metrics);
  request.step_seconds = DefaultStep(request.until_t - request.since_t);
  if (!o.step.empty()) {
    Result<std::chrono::milliseconds> step = ParseDurationWithUnit(o.step);
    if (!step.ok()) return ExitWith(step.status().WithContext("--step"));
    if (step.value() < std::chrono::seconds(1)) {
      return ExitWith(Status::InvalidArgument("--step: must be at least 1s", o.step));
    }
    request.step_seconds = step.value().count() / 1000;
  }
  for (const std::string& m : request.metrics) {
    if (std::find(store::MetricNames().begin(), store::MetricNames().end(), m) ==
        store::MetricNames().end()) {
      return ExitWith(Status::InvalidArgument(fmt::format("--metric: unknown metric '{}'", m),
                                              "known: utilization, memory, power, temperature, sm_clock, "
                                              "memory_utilization"));
    }
  }
  Result<StoreAccess> access = OpenStore(o.store);
  if (!access.ok()) return ExitWith(access.status());
  Result<store::HistoryResult> result = store::QueryHistory(access.value().db.get(), request);
  if (!result.ok()) return ExitWith(result.status());
  Print(result.value(), o.format, request.step_seconds);
  return kExitOk;
}

CLI::App* AddExportCommand(CLI::App* app, ExportOptions* o) {
  CLI::App* cmd = app->add_subcommand("export", "Raw samples (one row per GPU and second) for other tools");
  cmd->add_option("--gpu", o->gpu, "One GPU, by index or UUID (default: all)");
  cmd->add_option("--since", o->since, "Start: a duration ago (6h, 7d), a date, or @UNIX")->default_str("1d");
  cmd->add_option("--until", o->until, "End (inclusive)")->default_str("now");
  cmd->add_option("--format", o->format, "csv or jsonl")
      ->check(CLI::IsMember({"csv", "jsonl"}))
      ->default_str("csv");
  AddStoreAccessOptions(cmd, &o->store);
  return cmd;
}

int RunExport(const ExportOptions& o, Clock* clock) {
  Result<TimeRange> range = ParseRange(o.since, o.until, clock);
  if (!range.ok()) return ExitWith(range.status());
  Result<StoreAccess> access = OpenStore(o.store);
  if (!access.ok()) return ExitWith(access.status());
  // An hour at a time, so memory stays flat over long ranges.
  bool is_first = true;
  for (int64_t from = range.value().since_t; from < range.value().until_t; from += 3600) {
    store::HistoryRequest request;
    request.since_t = from;
    request.until_t = std::min(from + 3600, range.value().until_t);
    if (!o.gpu.empty()) request.gpu = o.gpu;
    request.step_seconds = 1;
    Result<store::HistoryResult> result = store::QueryHistory(access.value().db.get(), request);
    if (!result.ok()) return ExitWith(result.status());
    if (!is_first && o.format == "csv") {
      store::HistoryResult rows_only = result.value();
      for (const store::HistoryRow& row : rows_only.rows) {
        std::string line = fmt::format("{},{},{}", row.t, row.gpu_index, row.uuid);
        for (const std::optional<double>& v : row.values) line += "," + Value(v);
        std::puts(line.c_str());
      }
      continue;
    }
    Print(result.value(), o.format, request.step_seconds);
    is_first = false;
  }
  return kExitOk;
}

}  // namespace tarmac::cli
