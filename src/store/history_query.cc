// SPDX-License-Identifier: Apache-2.0
#include "store/history_query.h"

#include <fmt/format.h>

#include <map>

#include "store/codec.h"
#include "store/tick_record.h"

namespace tarmac::store {
namespace {

struct MetricDef {
  std::string name;
  std::string column;      // Output name, with its unit.
  GpuColumn raw;           // Raw column.
  double raw_scale;        // Raw value times this.
  const char* minute_sql;  // Expression over gpu_rollup_1m, or null.
  const char* hour_sql;    // Expression over gpu_rollup_1h, or null.
};

const std::vector<MetricDef>& Metrics() {
  static const std::vector<MetricDef> kMetrics = {
      {"utilization", "utilization_percent", kUtilizationPercent, 1.0, "utilization_mean_permille / 10.0",
       "utilization_sum_permille_seconds / 10.0 / MAX(covered_seconds, 1)"},
      {"memory", "memory_used_mib", kMemoryUsedMib, 1.0, "memory_used_mean_mib", "memory_used_max_mib"},
      {"power", "power_watts", kPowerDeciwatts, 0.1, "power_mean_deciwatts / 10.0",
       "power_sum_deciwatt_seconds / 10.0 / MAX(covered_seconds, 1)"},
      {"temperature", "temperature_celsius", kTemperatureCelsius, 1.0, "temperature_max_celsius",
       "temperature_max_celsius"},
      {"sm_clock", "sm_clock_mhz", kSmClockMegahertz, 1.0, nullptr, nullptr},
      {"memory_utilization", "memory_utilization_percent", kMemoryUtilizationPercent, 1.0, nullptr, nullptr},
  };
  return kMetrics;
}

struct Gpu {
  int64_t id = 0;
  int index = 0;
  std::string uuid;
};

// Mean per (step start, gpu) of each metric.
class Buckets {
 public:
  Buckets(size_t metrics, int64_t step) : metrics_(metrics), step_(step) {}
  void Add(int64_t t, int64_t gpu_id, size_t metric, std::optional<double> v) {
    if (!v) return;
    Cell& c = cells_[{t - t % step_, gpu_id}];
    if (c.sum.empty()) {
      c.sum.assign(metrics_, 0);
      c.n.assign(metrics_, 0);
    }
    c.sum[metric] += *v;
    c.n[metric]++;
  }
  std::vector<HistoryRow> Rows(const std::map<int64_t, Gpu>& gpus) const {
    std::vector<HistoryRow> rows;
    for (const auto& [key, c] : cells_) {
      const Gpu& g = gpus.at(key.second);
      HistoryRow row{key.first, g.index, g.uuid, {}};
      for (size_t m = 0; m < metrics_; ++m) {
        row.values.push_back(c.n[m] > 0 ? std::optional<double>(c.sum[m] / c.n[m]) : std::nullopt);
      }
      rows.push_back(std::move(row));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const HistoryRow& a, const HistoryRow& b) {
      return a.t != b.t ? a.t < b.t : a.gpu_index < b.gpu_index;
    });
    return rows;
  }

 private:
  struct Cell {
    std::vector<double> sum;
    std::vector<int64_t> n;
  };
  size_t metrics_;
  int64_t step_;
  std::map<std::pair<int64_t, int64_t>, Cell> cells_;
};

}  // namespace

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const MetricDef& m : Metrics()) names.push_back(m.name);
    return names;
  }();
  return kNames;
}

nlohmann::json HistoryRowToJson(const HistoryResult& r, const HistoryRow& row) {
  nlohmann::json j = {{"t", row.t}, {"gpu", row.gpu_index}, {"uuid", row.uuid}};
  for (size_t i = 0; i < r.columns.size() && i < row.values.size(); ++i) {
    if (row.values[i]) j[r.columns[i]] = *row.values[i];
  }
  return j;
}

nlohmann::json HistoryToJson(const HistoryResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const HistoryRow& row : r.rows) rows.push_back(HistoryRowToJson(r, row));
  return {{"tier", r.tier}, {"rows", std::move(rows)}};
}

namespace {

using MetricList = std::vector<const MetricDef*>;

// The metrics asked for (all when none), each known.
Result<MetricList> FindMetrics(const std::vector<std::string>& names) {
  MetricList metrics;
  for (const std::string& name : names.empty() ? MetricNames() : names) {
    const MetricDef* found = nullptr;
    for (const MetricDef& m : Metrics()) {
      if (m.name == name) found = &m;
    }
    if (found == nullptr) {
      std::string known;
      for (const std::string& n : MetricNames()) known += (known.empty() ? "" : ", ") + n;
      return Status::InvalidArgument(fmt::format("unknown metric '{}'", name),
                                     fmt::format("known: {}", known));
    }
    metrics.push_back(found);
  }
  return metrics;
}

// The GPUs in the history, or the one asked for (by index or UUID).
Result<std::map<int64_t, Gpu>> FindGpus(Db* db, const std::optional<std::string>& only) {
  std::map<int64_t, Gpu> gpus;
  Result<Stmt> list = db->Prepare("SELECT gpu_id, gpu_index, uuid FROM gpus");
  if (!list.ok()) return list.status();
  while (true) {
    Result<bool> row = list.value().Step();
    if (!row.ok()) return row.status();
    if (!row.value()) break;
    Gpu g{list.value().Int(0), static_cast<int>(list.value().Int(1)), list.value().Text(2)};
    if (only && *only != g.uuid && *only != std::to_string(g.index)) continue;
    gpus[g.id] = g;
  }
  if (only && gpus.empty()) {
    return Status::NotFound(fmt::format("no GPU '{}' in the history (give an index or a UUID)", *only));
  }
  return gpus;
}

// Raw samples: the packed minutes, then the minutes still in the journal
// (a clean stop also folds the minute in progress, which the journal keeps
// whole).
Status ReadRaw(Db* db, const HistoryRequest& request, const MetricList& metrics,
               const std::map<int64_t, Gpu>& gpus, Buckets* buckets) {
  Result<std::optional<int64_t>> journal_start = db->QueryInt("SELECT MIN(t) / 60 FROM tick_journal");
  if (!journal_start.ok()) return journal_start.status();
  int64_t raw_end = (request.until_t + 59) / 60;
  if (journal_start.value()) raw_end = std::min(raw_end, *journal_start.value());
  Result<Stmt> raw =
      db->Prepare("SELECT minute, samples FROM gpu_samples WHERE gpu_id = ? AND minute >= ? AND minute < ?");
  if (!raw.ok()) return raw.status();
  for (const auto& [id, g] : gpus) {
    raw.value().Reset();
    raw.value().Bind(1, id).Bind(2, request.since_t / 60).Bind(3, raw_end);
    while (true) {
      Result<bool> row = raw.value().Step();
      if (!row.ok()) return row.status();
      if (!row.value()) break;
      Result<Block> block = DecodeBlock(raw.value().Int(0) * 60, raw.value().Blob(1));
      if (!block.ok()) return block.status();
      const Block& b = block.value();
      for (size_t i = 0; i < b.times.size(); ++i) {
        if (b.times[i] < request.since_t || b.times[i] >= request.until_t) continue;
        for (size_t m = 0; m < metrics.size(); ++m) {
          std::optional<int64_t> v = b.columns[metrics[m]->raw][i];
          buckets->Add(b.times[i], id, m,
                       v ? std::optional<double>(*v * metrics[m]->raw_scale) : std::nullopt);
        }
      }
    }
  }
  Result<Stmt> journal = db->Prepare("SELECT t, payload FROM tick_journal WHERE t >= ? AND t < ?");
  if (!journal.ok()) return journal.status();
  journal.value().Bind(1, request.since_t).Bind(2, request.until_t);
  while (true) {
    Result<bool> row = journal.value().Step();
    if (!row.ok()) return row.status();
    if (!row.value()) return Status::OK();
    Result<TickRecord> tick = DecodeTick(journal.value().Int(0), journal.value().Blob(1));
    if (!tick.ok()) continue;
    for (const GpuTick& g : tick.value().gpus) {
      if (gpus.count(g.gpu_id) == 0) continue;
      for (size_t m = 0; m < metrics.size(); ++m) {
        std::optional<int64_t> v = g.values[metrics[m]->raw];
        buckets->Add(tick.value().t, g.gpu_id, m,
                     v ? std::optional<double>(*v * metrics[m]->raw_scale) : std::nullopt);
      }
    }
  }
}

// The minute or hour rollups.
Status ReadRollups(Db* db, const HistoryRequest& request, const MetricList& metrics, bool is_hour,
                   const std::map<int64_t, Gpu>& gpus, Buckets* buckets) {
  std::string exprs;
  for (const MetricDef* m : metrics) {
    const char* e = is_hour ? m->hour_sql : m->minute_sql;
    exprs += fmt::format(", {}", e != nullptr ? e : "NULL");
  }
  int64_t unit = is_hour ? 3600 : 60;
  std::string sql =
      fmt::format("SELECT {0} * {1}{2} FROM gpu_rollup_{3} WHERE gpu_id = ? AND {0} >= ? AND {0} < ?",
                  is_hour ? "hour" : "minute", unit, exprs, is_hour ? "1h" : "1m");
  Result<Stmt> rollup = db->Prepare(sql);
  if (!rollup.ok()) return rollup.status();
  for (const auto& [id, g] : gpus) {
    rollup.value().Reset();
    rollup.value().Bind(1, id).Bind(2, request.since_t / unit).Bind(3, (request.until_t + unit - 1) / unit);
    while (true) {
      Result<bool> row = rollup.value().Step();
      if (!row.ok()) return row.status();
      if (!row.value()) break;
      int64_t t = rollup.value().Int(0);
      for (size_t m = 0; m < metrics.size(); ++m) {
        int col = static_cast<int>(m) + 1;
        buckets->Add(
            t, id, m,
            rollup.value().IsNull(col) ? std::nullopt : std::optional<double>(rollup.value().Double(col)));
      }
    }
  }
  return Status::OK();
}

}  // namespace

Result<HistoryResult> QueryHistory(Db* db, const HistoryRequest& request) {
  if (request.until_t <= request.since_t) {
    return Status::InvalidArgument("the time range is empty: --until must be after --since");
  }
  if (request.step_seconds < 1) return Status::InvalidArgument("--step must be at least 1s");
  Result<MetricList> metrics = FindMetrics(request.metrics);
  if (!metrics.ok()) return metrics.status();
  Result<std::map<int64_t, Gpu>> gpus = FindGpus(db, request.gpu);
  if (!gpus.ok()) return gpus.status();
  HistoryResult result;
  for (const MetricDef* m : metrics.value()) result.columns.push_back(m->column);
  Buckets buckets(metrics.value().size(), request.step_seconds);
  bool is_hour = request.step_seconds >= 3600;
  result.tier = request.step_seconds < 60 ? "raw" : is_hour ? "1h" : "1m";
  Status read = request.step_seconds < 60
                    ? ReadRaw(db, request, metrics.value(), gpus.value(), &buckets)
                    : ReadRollups(db, request, metrics.value(), is_hour, gpus.value(), &buckets);
  if (!read.ok()) return read;
  result.rows = buckets.Rows(gpus.value());
  return result;
}

}  // namespace tarmac::store
