// SPDX-License-Identifier: Apache-2.0
#include "cli/report_command.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "common/units.h"
#include "report/report.h"
#include "report/report_render.h"
#include "store/schema.h"
#include "store/store_info.h"

namespace tarmac::cli {

// GPU-seconds after which the bytes per GPU-second of `store info` has
// settled: a week of 8 GPUs (bench/README.md, "The store").
constexpr int64_t kSettledGpuSeconds = int64_t{8} * 7 * 86400;
namespace {

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

}  // namespace

CLI::App* AddReportCommand(CLI::App* app, ReportOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "report", "Where GPU time and money went: per GPU and per user (or container), with a verdict");
  cmd->add_option("--since", o->since, "Start: a duration ago (7d, 30d), a date, or @UNIX")
      ->default_str("7d");
  cmd->add_option("--until", o->until, "End (inclusive)")->default_str("now");
  cmd->add_option("--by", o->by,
                  "Owners by user or container (of each process: container, pod, Slurm job); by pod or "
                  "namespace (the kubelet's allocations, idle or not); by slurm-job (prolog to epilog); "
                  "gpu: GPUs only")
      ->check(CLI::IsMember(report::GroupByNames()))
      ->default_str("user");
  cmd->add_option("--format", o->format, "text, json, csv or html (one self-contained file)")
      ->check(CLI::IsMember({"text", "json", "csv", "html"}))
      ->default_str("text");
  cmd->add_option("--out", o->out, "Write to FILE instead of stdout");
  cmd->add_option("--gpu-hour-cost", o->gpu_hour_cost,
                  "Price of one GPU-hour for this report (over [report] gpu_hour_cost; the history read "
                  "stays the same)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--currency", o->currency, "Currency shown with costs (over [report] currency), e.g. EUR")
      ->check([](const std::string& c) {
        bool ok = !c.empty() && c.size() <= 8 && std::all_of(c.begin(), c.end(), [](char ch) {
          return std::isalpha(static_cast<unsigned char>(ch));
        });
        return ok ? std::string() : std::string("a currency code of letters, e.g. USD or EUR");
      });
  AddStoreAccessOptions(cmd, &o->store);
  return cmd;
}

int RunReport(const ReportOptions& o, Clock* clock) {
  Result<TimeRange> range = ParseRange(o.since, o.until, clock);
  if (!range.ok()) return ExitWith(range.status());
  Result<StoreAccess> access = OpenStore(o.store);
  if (!access.ok()) return ExitWith(access.status());
  report::ReportRequest request;
  request.since_t = range.value().since_t;
  request.until_t = range.value().until_t;
  report::ParseGroupBy(o.by, &request.by);  // CLI11 checked the name.
  const config::Config& config = access.value().config;
  request.pricing = config.report;
  if (o.gpu_hour_cost) {  // This report's price for every model.
    request.pricing.gpu_hour_cost = *o.gpu_hour_cost;
    request.pricing.gpu_hour_cost_by_model.clear();
  }
  if (!o.currency.empty()) request.pricing.currency = o.currency;
  request.with_charts = o.format == "html" || o.format == "json";
  Result<report::Report> built = report::BuildReport(access.value().db.get(), request);
  if (!built.ok()) return ExitWith(built.status());
  std::string text = o.format == "json"   ? report::RenderJson(built.value())
                     : o.format == "csv"  ? report::RenderCsv(built.value())
                     : o.format == "html" ? report::RenderHtml(built.value())
                                          : report::RenderText(built.value());
  if (o.out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  std::ofstream out(o.out, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return ExitWith(Status::IOError(fmt::format("--out: cannot write {}", o.out)));
  std::fprintf(stderr, "tarmac: report written to %s\n", o.out.c_str());
  return kExitOk;
}

CLI::App* AddStoreCommand(CLI::App* app, StoreInfoOptions* o, CLI::App** info) {
  CLI::App* cmd = app->add_subcommand("store", "The history store");
  cmd->require_subcommand(1);
  *info =
      cmd->add_subcommand("info", "Where the history is, how big, what it holds and how long it keeps it");
  (*info)->add_flag("--json", o->json, "Print as JSON");
  AddStoreAccessOptions(*info, &o->store);
  return cmd;
}

int RunStoreInfo(const StoreInfoOptions& o) {
  Result<StoreAccess> access = OpenStore(o.store);
  if (!access.ok()) return ExitWith(access.status());
  store::Db* db = access.value().db.get();
  const std::string& path = access.value().path;
  nlohmann::json j;
  j["path"] = path;
  int64_t file = FileSize(path);
  int64_t wal = FileSize(path + "-wal");
  j["file_bytes"] = file;
  j["wal_bytes"] = wal;
  Result<store::StoreInfo> read = store::ReadStoreInfo(db);
  if (!read.ok()) return ExitWith(read.status());
  const store::StoreInfo& info = read.value();
  auto unix_or_null = [](const std::optional<int64_t>& t) {
    return t ? nlohmann::json(*t) : nlohmann::json(nullptr);
  };
  j["schema_version"] = info.schema_version;
  j["free_pages"] = info.free_pages;
  nlohmann::json tables = nlohmann::json::object();
  for (const auto& [table, rows] : info.rows) tables[table] = rows;
  j["rows"] = tables;
  j["oldest"] = {{"raw", unix_or_null(info.oldest_raw_unix)},
                 {"1m", unix_or_null(info.oldest_minute_unix)},
                 {"1h", unix_or_null(info.oldest_hour_unix)}};
  j["newest"] = unix_or_null(info.newest_unix);
  int64_t gpu_samples = info.gpu_seconds_recorded;
  j["gpu_seconds_recorded"] = gpu_samples;
  j["is_young_history"] = gpu_samples < kSettledGpuSeconds;
  if (gpu_samples > 0)
    j["bytes_per_gpu_second"] = static_cast<double>(file + wal) / static_cast<double>(gpu_samples);
  const config::Config& c = access.value().config;
  const store::Retention& retention = c.store.options.retention;
  j["retention_seconds"] = {
      {"raw", retention.raw.count()}, {"1m", retention.minute.count()}, {"1h", retention.hour.count()}};
  if (o.json) {
    std::puts(j.dump(2).c_str());
    return kExitOk;
  }
  auto when = [](const nlohmann::json& t) {
    return t.is_null() ? std::string("-") : report::FormatTime(t.get<int64_t>());
  };
  std::printf("%s: schema %lld, %s (+ %s write-ahead log)\n", path.c_str(),
              static_cast<long long>(j["schema_version"].get<int64_t>()), FormatBytes(file).c_str(),
              FormatBytes(wal).c_str());
  if (j.contains("bytes_per_gpu_second")) {
    std::printf("%lld GPU-seconds recorded: %.1f bytes each, all tables and indexes included\n",
                static_cast<long long>(gpu_samples), j["bytes_per_gpu_second"].get<double>());
    // A young history: the file's fixed part (pages, indexes, sessions)
    // outweighs its samples; the figure falls as it grows.
    if (gpu_samples < kSettledGpuSeconds) {
      std::printf(
          "  (a young history: its file's fixed part weighs on this; about 5 bytes each once it\n"
          "   holds a week of 8 GPUs, bench/README.md)\n");
    }
  }
  std::printf("raw samples since %s (kept %s)\n", when(j["oldest"]["raw"]).c_str(),
              FormatDuration(retention.raw).c_str());
  std::printf("1-minute rollups since %s (kept %s)\n", when(j["oldest"]["1m"]).c_str(),
              FormatDuration(retention.minute).c_str());
  std::printf("1-hour rollups since %s (kept %s)\n", when(j["oldest"]["1h"]).c_str(),
              FormatDuration(retention.hour).c_str());
  std::printf("newest sample %s\n", when(j["newest"]).c_str());
  for (auto& [table, rows] : tables.items()) {
    std::printf("  %-20s %lld rows\n", table.c_str(), static_cast<long long>(rows.get<int64_t>()));
  }
  return kExitOk;
}

}  // namespace tarmac::cli
