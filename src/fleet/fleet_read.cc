// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_read.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "node/metric_families.h"

namespace tarmac::fleet {
namespace {

using prom::QueryResult;
using prom::Sample;

// The GPUs of the nodes that answer now, with only the labels read: an
// agent's info series carries its driver, PCI address and more, a tenth of
// a large fleet's answer bytes each.
std::string InfoQuery() {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) ({})", node::family::kGpuInfo);
}
std::string LastSampleQuery() { return node::family::kLastSampleTimestampSeconds; }

// The same over the window, for the down nodes `instances` only: a day of
// every GPU's samples is what a fleet scraped every 15 s cannot afford to
// read (80,000 GPUs: 460 million samples, most of a minute of a core, past
// the command's timeout), and a down node has none since it went down.
std::string InstancesMatcher(const std::vector<std::string>& instances) {
  std::string alternation;
  for (const std::string& i : instances)
    alternation += (alternation.empty() ? "" : "|") + prom::RegexLiteral(i);
  return "{instance=~" + prom::QuoteLabelValue(alternation) + "}";
}
std::string DownInfoQuery(const std::vector<std::string>& instances) {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) (last_over_time({}{}[{}]))",
                     node::family::kGpuInfo, InstancesMatcher(instances), kDownWindow);
}
std::string DownLastSampleQuery(const std::vector<std::string>& instances) {
  return fmt::format("last_over_time({}{}[{}])", node::family::kLastSampleTimestampSeconds,
                     InstancesMatcher(instances), kDownWindow);
}
// Down nodes a query: a few hundred nodes' day of samples stays far below
// the store's limits even at a 15 s scrape.
constexpr size_t kDownNodesAQuery = 200;
std::string DcgmInfoQuery() { return fmt::format("last_over_time(DCGM_FI_DEV_GPU_UTIL[{}])", kDownWindow); }
std::string IdleHoldersQuery() {
  return fmt::format("count by (instance, uuid) ({} == 0)", node::family::kProcessSmUtilizationRatio);
}
std::string ProcessesQuery() {
  return fmt::format("count by (instance, uuid) ({})", node::family::kProcessGpuMemoryBytes);
}
std::string RecentQuery() {
  return fmt::format("max by (instance, gpu) (avg_over_time({}[1m]))", node::family::kGpuUtilizationRatio);
}
constexpr const char* kDcgmReadingsQuery =
    "{__name__=~\"DCGM_FI_DEV_(GPU_UTIL|FB_USED|FB_FREE|FB_RESERVED|POWER_USAGE|GPU_TEMP)\"}";

// tarmac's reading families, each asked with only the labels read, a GPU
// by its node and index (a thousand nodes' full label sets would be tens of
// megabytes): by family.
// One family's query, asked with only the labels read.
struct ReadingQuery {
  std::string family;
  std::string promql;
  bool is_idle_part;  // What `fleet idle` reads (ReadParts::idle_only).
  // Sets what a sample of the family says on its GPU.
  void (*apply)(const Sample& s, FleetGpu* g);

  bool IsAskedFor(const ReadParts& parts) const { return is_idle_part || !parts.idle_only; }
};

// The marks (idle, held idle, lost) and the idle spells' lengths are asked
// only where they are set (`== 1`, `> 0`): on most of a fleet they are 0,
// and a thousand nodes' zeros would be most of the answer's bytes. The
// spell's cost is asked everywhere: a GPU with a cost (0 or not) is one
// whose agent exports the spells, and the lengths absent from their
// answers are 0 on it.
std::optional<double> FiniteOrNone(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// A mark's GPUs, where it is set, named as tarmac_gpu_info names them.
std::string MarkQuery(const char* family) {
  return fmt::format("max by (instance, hostname, gpu, uuid, model) ({} == 1)", family);
}

const std::vector<ReadingQuery>& ReadingQueries() {
  using G = FleetGpu;
  static const std::vector<ReadingQuery> kQueries = [] {
    std::vector<ReadingQuery> out;
    auto add = [&out](const char* family, const char* filter, bool is_idle_part,
                      void (*apply)(const Sample&, G*)) {
      out.push_back(
          {family, fmt::format("max by (instance, gpu) ({}{})", family, filter), is_idle_part, apply});
    };
    namespace f = node::family;
    add(f::kGpuUtilizationRatio, "", false,
        [](const Sample& s, G* g) { g->utilization_ratio = FiniteOrNone(s.value); });
    add(f::kGpuMemoryTotalBytes, "", false,
        [](const Sample& s, G* g) { g->memory_total_bytes = FiniteOrNone(s.value); });
    add(f::kGpuMemoryFreeBytes, "", false,
        [](const Sample& s, G* g) { g->memory_free_bytes = FiniteOrNone(s.value); });
    add(f::kGpuPowerWatts, "", false, [](const Sample& s, G* g) { g->power_watts = FiniteOrNone(s.value); });
    add(f::kGpuPowerLimitWatts, "", false,
        [](const Sample& s, G* g) { g->power_limit_watts = FiniteOrNone(s.value); });
    add(f::kGpuTemperatureCelsius, "", false,
        [](const Sample& s, G* g) { g->temperature_celsius = FiniteOrNone(s.value); });
    add(f::kGpuMemoryUsedBytes, "", true,
        [](const Sample& s, G* g) { g->memory_used_bytes = FiniteOrNone(s.value); });
    add(f::kGpuLost, " == 1", false, [](const Sample& s, G* g) { g->is_lost = s.value == 1; });
    out.push_back({f::kGpuHealth, fmt::format("max by (instance, gpu, verdict) ({} == 1)", f::kGpuHealth),
                   false, [](const Sample& s, G* g) { g->verdict = s.Label("verdict"); }});
    out.push_back(
        {f::kGpuPcieLinkWidth,
         fmt::format("max by (instance, gpu) ({} < {})", f::kGpuPcieLinkWidth, f::kGpuPcieLinkWidthMax),
         false, [](const Sample& s, G* g) { g->pcie_link_width = FiniteOrNone(s.value); }});
    out.push_back({f::kGpuXidErrorsTotal,
                   fmt::format("sum by (instance, gpu) ({}) > 0", f::kGpuXidErrorsTotal), false,
                   [](const Sample& s, G* g) { g->xid_errors = FiniteOrNone(s.value); }});
    out.push_back({f::kGpuEccErrorsTotal,
                   fmt::format("max by (instance, gpu) ({}{{kind=\"uncorrected\",scope=\"volatile\"}}) > 0",
                               f::kGpuEccErrorsTotal),
                   false, [](const Sample& s, G* g) { g->ecc_uncorrected = FiniteOrNone(s.value); }});
    // The marks keep the GPU's identity (every tarmac family carries it):
    // `fleet idle` names its GPUs from them alone (ReadParts::idle_only).
    out.push_back({f::kGpuIdle, MarkQuery(f::kGpuIdle), true,
                   [](const Sample& s, G* g) { g->is_idle = s.value == 1; }});
    out.push_back({f::kGpuHeldIdle, MarkQuery(f::kGpuHeldIdle), true,
                   [](const Sample& s, G* g) { g->is_held_idle = s.value == 1; }});
    add(f::kGpuIdleForSeconds, " > 0", true,
        [](const Sample& s, G* g) { g->idle_for_seconds = FiniteOrNone(s.value); });
    add(f::kGpuHeldIdleForSeconds, " > 0", true,
        [](const Sample& s, G* g) { g->held_idle_for_seconds = FiniteOrNone(s.value); });
    out.push_back({f::kGpuIdleForCost,
                   fmt::format("max by (instance, gpu, currency) ({})", f::kGpuIdleForCost), true,
                   [](const Sample& s, G* g) {
                     g->idle_for_cost = FiniteOrNone(s.value);
                     g->currency = s.Label("currency");
                   }});
    out.push_back({f::kGpuThrottled,
                   fmt::format("max by (instance, gpu, reason) ({} == 1)", f::kGpuThrottled), false,
                   [](const Sample& s, G* g) {
                     if (s.value == 1) g->throttle_reasons.push_back(s.Label("reason"));
                   }});
    // Only the labels read: a fleet's leases are tens of thousands of
    // series, each label set otherwise a quarter of a kilobyte.
    out.push_back({f::kGpuLease,
                   fmt::format("max by (instance, gpu, lease, user, kind, slurm_job, mig_uuid) ({} == 1)",
                               f::kGpuLease),
                   true, [](const Sample& s, G* g) {
                     if (s.value != 1) return;
                     g->holders.push_back(GpuHolder{std::atoll(s.Label("lease").c_str()), s.Label("user"),
                                                    s.Label("kind"), s.Label("slurm_job"),
                                                    s.Label("mig_uuid")});
                   }});
    out.push_back({f::kGpuPodAllocated,
                   fmt::format("max by (instance, gpu, namespace, pod) ({} == 1)", f::kGpuPodAllocated), true,
                   [](const Sample& s, G* g) {
                     if (!s.Label("pod").empty()) g->pod = s.Label("namespace") + "/" + s.Label("pod");
                   }});
    return out;
  }();
  return kQueries;
}

// --by node (ReadParts::by_node): each node's GPUs, counted by UUID (a GPU
// whose info series changed within the lookback counts once).
std::string NodeInfoQuery() {
  return fmt::format("count by (instance, hostname) (max by (instance, hostname, uuid) ({}))",
                     node::family::kGpuInfo);
}
// Its held-idle GPUs by UUID (the mark carries it), whose idle holders
// IdleHoldersQuery counts.
std::string HeldIdleUuidQuery() {
  return fmt::format("max by (instance, uuid) ({} == 1)", node::family::kGpuHeldIdle);
}

// A count of each node's GPUs, and what a sample of it sets.
struct CountQuery {
  std::string promql;
  void (*apply)(const Sample& s, NodeCounts* c);
};

const std::vector<CountQuery>& CountQueries() {
  namespace f = node::family;
  static const std::vector<CountQuery> kQueries = {
      {fmt::format("count by (instance) ({} == 1)", f::kGpuIdle),
       [](const Sample& s, NodeCounts* c) { c->idle = static_cast<int>(s.value); }},
      {fmt::format("count by (instance) ({} == 1)", f::kGpuLost),
       [](const Sample& s, NodeCounts* c) { c->lost = static_cast<int>(s.value); }},
      // A GPU whose MIG instances several leases hold counts once.
      {fmt::format("count by (instance) (max by (instance, gpu) ({} == 1))", f::kGpuLease),
       [](const Sample& s, NodeCounts* c) { c->leased = static_cast<int>(s.value); }},
      // Only the verdicts counted: a third fewer series than all three.
      {fmt::format("count by (instance, verdict) ({}{{verdict=~\"drain|degraded\"}} == 1)", f::kGpuHealth),
       [](const Sample& s, NodeCounts* c) {
         if (s.Label("verdict") == "drain") c->drain = static_cast<int>(s.value);
         if (s.Label("verdict") == "degraded") c->degraded = static_cast<int>(s.value);
       }},
      {fmt::format("avg by (instance) ({})", f::kGpuUtilizationRatio),
       [](const Sample& s, NodeCounts* c) { c->utilization_ratio = FiniteOrNone(s.value); }},
  };
  return kQueries;
}

// --by node from the agents' own counts (metrics/node_render.h): six
// series a node for tarmac_node_gpus, one for each of the others, where
// counting the GPUs' series is the store reading every GPU's.
std::string NodeGpusQuery() {
  return fmt::format("max by (instance, hostname, which) ({})", node::family::kNodeGpus);
}
const std::vector<CountQuery>& NodeSeriesQueries() {
  namespace f = node::family;
  static const std::vector<CountQuery> kQueries = {
      {fmt::format("max by (instance) ({})", f::kNodeGpusLeased),
       [](const Sample& s, NodeCounts* c) { c->leased = static_cast<int>(s.value); }},
      {fmt::format("max by (instance) ({})", f::kNodeIdleHolders),
       [](const Sample& s, NodeCounts* c) { c->idle_holders = static_cast<int>(s.value); }},
      {fmt::format("max by (instance) ({})", f::kNodeUtilizationRatio),
       [](const Sample& s, NodeCounts* c) { c->utilization_ratio = FiniteOrNone(s.value); }},
  };
  return kQueries;
}
// A count tarmac_node_gpus gives, by its `which`.
void ApplyWhich(const Sample& s, NodeCounts* c) {
  const std::string& which = s.Label("which");
  int n = static_cast<int>(s.value);
  if (which == "all") c->gpus = n;
  if (which == "idle") c->idle = n;
  if (which == "held_idle") c->held_idle = n;
  if (which == "lost") c->lost = n;
  if (which == "drain") c->drain = n;
  if (which == "degraded") c->degraded = n;
}

// A GPU is the series' scrape target and UUID; a node its scrape target.
using NodeAndGpu = std::pair<std::string, std::string>;

// A GPU's readings' key: its scrape target and index label, apart by a
// byte neither holds (label values are UTF-8 text).
std::string ReadingKey(const std::string& instance, const std::string& index) {
  std::string key;
  key.reserve(instance.size() + 1 + index.size());
  key += instance;
  key += '\xff';
  key += index;
  return key;
}

// A GPU tarmac_gpu_info names: its node, index label, UUID and model.
struct InfoGpu {
  std::string instance;
  std::string index;
  std::string uuid;
  std::string model;
};

// The answers, folded into the view's form as they come (a reading never
// waits for the others, and is freed once folded); the few that need the
// GPUs known first are kept until every answer is in.
struct Reader {
  explicit Reader(FleetView* v) : view(v) {}
  FleetView* view;
  std::vector<std::string> asked;                       // The queries, by index.
  std::set<std::string> info_queries;                   // Those of tarmac_gpu_info's GPUs.
  std::vector<std::string> last_sample_queries;         // Kept: when each node last sampled.
  std::set<std::string> kept;                           // Those kept whole until every answer is in.
  std::map<std::string, QueryResult> answers;           // The kept answers, by query.
  std::optional<std::pair<size_t, Status>> refused;     // The first refusal in asking order.
  std::map<size_t, std::vector<std::string>> warnings;  // By query, to list them in asking order.

  std::map<std::string, FleetNode> nodes;  // By instance.
  std::vector<InfoGpu> info;               // tarmac_gpu_info's GPUs, in its answer's order.
  // The readings of tarmac's families by ReadingKey, as they come: a
  // hash table, as a fleet's million readings each find their GPU here.
  std::unordered_map<std::string, FleetGpu> readings;
  std::map<NodeAndGpu, FleetGpu> gpus;       // Once every answer is in (Join).
  std::map<std::string, NodeCounts> counts;  // --by node: by instance, as they come.
  // --by node: the nodes whose agents count their own GPUs, and those
  // that answer now without (whose GPUs the store counts: CountTheRest).
  std::set<std::string> counted;
  std::set<std::string> uncounted;

  // Takes the answer to asked[i]: folds a reading or the GPU list in at
  // once; keeps the others.
  void Take(size_t i, Result<QueryResult> answer) {
    if (!answer.ok()) {
      if (!refused || i < refused->first) refused = std::make_pair(i, answer.status());
      return;
    }
    QueryResult& a = answer.value();
    if (!a.warnings.empty()) warnings[i] = std::move(a.warnings);
    view->is_partial = view->is_partial || a.is_partial;
    const std::string& promql = asked[i];
    if (info_queries.count(promql) != 0) {  // A list of GPUs (and maybe a reading of them: a mark).
      for (const Sample& s : a.samples) {
        Node(s, "hostname", "tarmac");
        info.push_back({s.Label("instance"), s.Label("gpu"), s.Label("uuid"), s.Label("model")});
      }
    }
    if (kept.count(promql) != 0) {
      answers[promql] = std::move(a);
      return;
    }
    if (promql == NodeGpusQuery()) {
      for (const Sample& s : a.samples) {
        if (s.Label("which") == "all" && counted.insert(s.Label("instance")).second)
          Node(s, "hostname", "tarmac");
        ApplyWhich(s, &counts[s.Label("instance")]);
      }
      return;
    }
    for (const CountQuery& q : NodeSeriesQueries()) {
      if (q.promql != promql) continue;
      for (const Sample& s : a.samples) q.apply(s, &counts[s.Label("instance")]);
    }
    // The store's counts, of the nodes whose agents do not count.
    if (promql == NodeInfoQuery()) {
      for (const Sample& s : a.samples) {
        if (uncounted.count(s.Label("instance")) == 0) continue;
        Node(s, "hostname", "tarmac");
        counts[s.Label("instance")].gpus = static_cast<int>(s.value);
      }
      return;
    }
    for (const CountQuery& q : CountQueries()) {
      if (q.promql != promql) continue;
      for (const Sample& s : a.samples) {
        if (uncounted.count(s.Label("instance")) != 0) q.apply(s, &counts[s.Label("instance")]);
      }
    }
    for (const ReadingQuery& q : ReadingQueries()) {
      if (q.promql != promql) continue;
      for (const Sample& s : a.samples)
        q.apply(s, &readings[ReadingKey(s.Label("instance"), s.Label("gpu"))]);
    }
    if (promql == RecentQuery()) {
      for (const Sample& s : a.samples) {
        readings[ReadingKey(s.Label("instance"), s.Label("gpu"))].recent_utilization_ratio =
            FiniteOrNone(s.value);
      }
    }
  }

  // The warnings of the answers taken, into the view in asking order.
  void TakeWarnings() {
    for (auto& [i, said] : warnings) view->warnings.insert(view->warnings.end(), said.begin(), said.end());
    warnings.clear();
  }

  // A kept answer's samples.
  std::vector<Sample> Kept(const std::string& promql) {
    auto it = answers.find(promql);
    if (it == answers.end()) return {};
    std::vector<Sample> out = std::move(it->second.samples);
    answers.erase(it);
    return out;
  }

  // tarmac's GPUs with their readings: a node's index is its first GPU of
  // that index in tarmac_gpu_info's answer (a GPU replaced within the day
  // is listed twice, its readings on one).
  void Join() {
    for (InfoGpu& i : info) {
      NodeAndGpu key{i.instance, i.uuid};
      if (gpus.count(key) != 0) continue;
      FleetGpu g;
      if (auto it = readings.find(ReadingKey(i.instance, i.index)); it != readings.end()) {
        g = std::move(it->second);
        readings.erase(it);
      }
      g.index = std::atoi(i.index.c_str());
      g.uuid = i.uuid;
      g.model = i.model;
      gpus.emplace(std::move(key), std::move(g));
    }
    info.clear();
    readings.clear();
  }

  FleetGpu* Gpu(const Sample& s, const std::string& uuid_label) {
    auto it = gpus.find({s.Label("instance"), s.Label(uuid_label)});
    return it == gpus.end() ? nullptr : &it->second;
  }

  FleetNode& Node(const Sample& s, const std::string& host_label, const std::string& source) {
    FleetNode& node = nodes[s.Label("instance")];
    if (node.instance.empty()) {
      node.instance = s.Label("instance");
      node.name = s.Label(host_label).empty() ? node.instance : s.Label(host_label);
      node.source = source;
    }
    return node;
  }

  void AddGpu(const Sample& s, const std::string& uuid_label, const std::string& model_label) {
    NodeAndGpu key{s.Label("instance"), s.Label(uuid_label)};
    if (gpus.count(key) != 0) return;
    FleetGpu g;
    g.index = std::atoi(s.Label("gpu").c_str());
    g.uuid = s.Label(uuid_label);
    g.model = s.Label(model_label);
    gpus.emplace(key, std::move(g));
  }
};

// Readings of the nodes only dcgm-exporter reports, in its units.
void ApplyDcgmReadings(const std::vector<Sample>& dcgm, Reader* r) {
  for (const Sample& s : dcgm) {
    auto node = r->nodes.find(s.Label("instance"));
    if (node == r->nodes.end() || node->second.source != "dcgm-exporter") continue;
    FleetGpu* g = r->Gpu(s, "UUID");
    if (g == nullptr) continue;
    const std::string& name = s.Label("__name__");
    constexpr double kMiB = 1024.0 * 1024.0;
    if (name == "DCGM_FI_DEV_GPU_UTIL") {
      g->utilization_ratio = s.value / 100;
      g->is_idle = s.value < 5;
    }
    if (name == "DCGM_FI_DEV_FB_USED") g->memory_used_bytes = s.value * kMiB;
    if (name == "DCGM_FI_DEV_FB_FREE") g->memory_free_bytes = s.value * kMiB;
    if (name == "DCGM_FI_DEV_FB_FREE" || name == "DCGM_FI_DEV_FB_RESERVED") {
      g->memory_total_bytes = g->memory_total_bytes.value_or(0) + s.value * kMiB;
    }
    if (name == "DCGM_FI_DEV_POWER_USAGE") g->power_watts = FiniteOrNone(s.value);
    if (name == "DCGM_FI_DEV_GPU_TEMP") g->temperature_celsius = FiniteOrNone(s.value);
  }
}

// The nodes seen within the window that do not answer now (the series
// API lists them without reading a sample), their GPUs and last samples
// read over the window: the nodes that answer were read at `now_unix`. A
// store that will not list that many series (over one of its limits:
// VictoriaMetrics' -search.maxSeries) leaves the down nodes out, and the
// view says so; any other refusal is the reading's.
Status ReadDownNodes(prom::PromClient* client, double now_unix, Reader* r) {
  auto seen =
      client->Series({node::family::kLastSampleTimestampSeconds}, now_unix - kDownWindowSeconds, now_unix);
  if (!seen.ok() && seen.status().code() == StatusCode::kResourceExhausted) {
    r->view->warnings.push_back(
        "down nodes are not listed: the store would not list the nodes seen within the day (" +
        seen.status().message() +
        "); raise that limit (VictoriaMetrics: -search.maxSeries) to see them "
        "(docs/fleet.md#victoriametrics)");
    return Status::OK();
  }
  if (!seen.ok()) return seen.status();
  std::set<std::string> down;
  for (const auto& labels : seen.value()) {
    auto instance = labels.find("instance");
    if (instance != labels.end() && r->nodes.count(instance->second) == 0) down.insert(instance->second);
  }
  if (down.empty()) return Status::OK();
  std::vector<std::string> batch;
  r->asked.clear();
  for (auto it = down.begin(); it != down.end(); ++it) {
    batch.push_back(*it);
    if (batch.size() < kDownNodesAQuery && std::next(it) != down.end()) continue;
    r->asked.push_back(DownInfoQuery(batch));
    r->info_queries.insert(r->asked.back());
    r->asked.push_back(DownLastSampleQuery(batch));
    r->kept.insert(r->asked.back());
    r->last_sample_queries.push_back(r->asked.back());
    batch.clear();
  }
  client->QueryEachInTurn(r->asked, now_unix,
                          [r](size_t i, Result<QueryResult> answer) { r->Take(i, std::move(answer)); });
  if (r->refused) return r->refused->second;
  r->TakeWarnings();
  return Status::OK();
}

// --by node: the nodes that answer now (they sampled) but whose agents do
// not count their own GPUs (agents before tarmac_node_gpus) have them
// counted by the store, at the same instant `now_unix`; a fleet of agents
// that count asks nothing more.
Status CountTheRest(prom::PromClient* client, double now_unix, Reader* r) {
  auto sampled = r->answers.find(LastSampleQuery());
  if (sampled == r->answers.end()) return Status::OK();
  for (const Sample& s : sampled->second.samples) {
    if (r->counted.count(s.Label("instance")) == 0) r->uncounted.insert(s.Label("instance"));
  }
  if (r->uncounted.empty()) return Status::OK();
  r->asked = {NodeInfoQuery(), HeldIdleUuidQuery(), IdleHoldersQuery()};
  r->kept.insert({HeldIdleUuidQuery(), IdleHoldersQuery()});
  for (const CountQuery& q : CountQueries()) r->asked.push_back(q.promql);
  client->QueryEachInTurn(r->asked, now_unix,
                          [r](size_t i, Result<QueryResult> answer) { r->Take(i, std::move(answer)); });
  if (r->refused) return r->refused->second;
  r->TakeWarnings();
  return Status::OK();
}

// What a reading of `parts` asks, and which answers it keeps until every
// answer is in.
void Ask(const ReadParts& parts, Reader* r) {
  r->asked = {LastSampleQuery(), DcgmInfoQuery(), "up", kDcgmReadingsQuery, "time()"};
  if (!parts.by_node) r->asked.insert(r->asked.end(), {IdleHoldersQuery(), ProcessesQuery()});
  r->kept = {r->asked.begin(), r->asked.end()};
  r->last_sample_queries = {LastSampleQuery()};
  if (parts.by_node) {  // The agents' counts; the store's for the rest (CountTheRest).
    r->asked.push_back(NodeGpusQuery());
    for (const CountQuery& q : NodeSeriesQueries()) r->asked.push_back(q.promql);
    return;
  }
  // `fleet idle` shows only idle and held-idle GPUs: the marks name them,
  // and no GPU list (80,000 series, the largest answer) is read.
  if (parts.idle_only) {
    r->info_queries = {MarkQuery(node::family::kGpuIdle), MarkQuery(node::family::kGpuHeldIdle)};
  } else {
    r->asked.push_back(InfoQuery());
    r->info_queries = {InfoQuery()};
  }
  if (parts.recent_utilization) r->asked.push_back(RecentQuery());
  for (const ReadingQuery& q : ReadingQueries()) {
    if (q.IsAskedFor(parts)) r->asked.push_back(q.promql);
  }
}

// --by node: the counts into the nodes that answer now; for those the store
// counted, the idle holders of their held-idle GPUs (processes at 0 % SM,
// by UUID).
void ApplyCounts(Reader* r) {
  std::set<NodeAndGpu> held;
  for (const Sample& s : r->Kept(HeldIdleUuidQuery())) {
    if (r->uncounted.count(s.Label("instance")) == 0) continue;
    if (held.insert({s.Label("instance"), s.Label("uuid")}).second)
      ++r->counts[s.Label("instance")].held_idle;
  }
  for (const Sample& s : r->Kept(IdleHoldersQuery())) {
    if (held.count({s.Label("instance"), s.Label("uuid")}) != 0)
      r->counts[s.Label("instance")].idle_holders += static_cast<int>(s.value);
  }
  for (auto& [instance, c] : r->counts) {
    auto node = r->nodes.find(instance);
    if (node != r->nodes.end() && node->second.source == "tarmac") node->second.counts = c;
  }
}

// The nodes and their GPUs into the view, in order.
void Assemble(Reader* r, FleetView* view) {
  for (auto& [key, g] : r->gpus) {
    FleetNode& node = r->nodes[key.first];
    if (node.source == "dcgm-exporter" && g.memory_total_bytes && g.memory_used_bytes) {
      *g.memory_total_bytes += *g.memory_used_bytes;  // dcgm-exporter gives used, free and reserved.
    }
    node.gpus.push_back(std::move(g));
  }
  for (auto& [instance, node] : r->nodes) {
    std::sort(node.gpus.begin(), node.gpus.end(),
              [](const FleetGpu& a, const FleetGpu& b) { return a.index < b.index; });
    view->nodes.push_back(std::move(node));
  }
  std::sort(view->nodes.begin(), view->nodes.end(), [](const FleetNode& a, const FleetNode& b) {
    return a.name != b.name ? a.name < b.name : a.instance < b.instance;
  });
}

}  // namespace

Result<FleetView> ReadFleet(prom::PromClient* client, const ReadParts& parts) {
  FleetView view;
  view.prometheus_url = client->url();
  Reader r(&view);
  Ask(parts, &r);
  client->QueryEachInTurn(r.asked, std::nullopt,
                          [&r](size_t i, Result<QueryResult> answer) { r.Take(i, std::move(answer)); });
  if (r.refused) return r.refused->second;
  r.TakeWarnings();
  std::vector<Sample> t = r.Kept("time()");
  if (!t.empty()) view.taken_at_unix = t.front().value;
  if (parts.by_node) {
    if (Status rest = CountTheRest(client, view.taken_at_unix, &r); !rest.ok()) return rest;
  }
  // `fleet idle` shows the nodes that answer now: no down node is read.
  if (!parts.idle_only) {
    if (Status down = ReadDownNodes(client, view.taken_at_unix, &r); !down.ok()) return down;
  }

  // The GPUs of every tarmac node seen within the window, down ones too,
  // with their readings now.
  r.Join();
  bool any_sampled = false;  // A tarmac node answers now.
  for (const std::string& q : r.last_sample_queries) {
    for (const Sample& s : r.Kept(q)) {
      any_sampled = true;
      if (r.nodes.count(s.Label("instance")) != 0)
        r.nodes[s.Label("instance")].last_seen_unix = FiniteOrNone(s.value);
    }
  }

  // Nodes only dcgm-exporter reports (tarmac's agents export its families
  // too: those nodes are already known by their scrape target).
  for (const Sample& s : r.Kept(DcgmInfoQuery())) {
    if (r.nodes.count(s.Label("instance")) != 0 && r.nodes[s.Label("instance")].source == "tarmac") continue;
    std::string host_label = s.Label("Hostname").empty() ? "hostname" : "Hostname";
    r.Node(s, host_label, "dcgm-exporter");
    r.AddGpu(s, "UUID", "modelName");
  }

  // Which scrape targets answered their last scrape.
  for (const Sample& s : r.Kept("up")) {
    auto it = r.nodes.find(s.Label("instance"));
    if (it != r.nodes.end()) it->second.is_up = it->second.is_up || s.value == 1;
  }
  // Nothing to show: say why it may be, rather than an empty fleet alone.
  if (r.nodes.empty() && !(parts.idle_only && any_sampled)) {  // Idle: nodes with an idle GPU.
    view.warnings.push_back(
        "no node reports to this store: no scrape target exported tarmac's GPU series or dcgm-exporter's "
        "in the last day. A store that began scraping within the last minute may not show its newest "
        "samples yet (VictoriaMetrics hides the last 30 s by default, -search.latencyOffset); else check "
        "its scrape targets (docs/fleet.md#set-up)");
  }

  if (parts.by_node) ApplyCounts(&r);
  // Processes holding memory at 0 % SM, and processes, per GPU.
  for (const Sample& s : r.Kept(IdleHoldersQuery())) {
    if (FleetGpu* g = r.Gpu(s, "uuid")) g->idle_holders = static_cast<int>(s.value);
  }
  for (const Sample& s : r.Kept(ProcessesQuery())) {
    if (FleetGpu* g = r.Gpu(s, "uuid")) g->processes = static_cast<int>(s.value);
  }
  // Not in an idle spell: its lengths are 0 where the agent exports them.
  for (auto& [key, g] : r.gpus) {
    if (!g.idle_for_cost) continue;
    if (!g.idle_for_seconds) g.idle_for_seconds = 0;
    if (!g.held_idle_for_seconds) g.held_idle_for_seconds = 0;
  }
  ApplyDcgmReadings(r.Kept(kDcgmReadingsQuery), &r);
  Assemble(&r, &view);
  return view;
}

Result<int> CountNodesNow(prom::PromClient* client) {
  Result<QueryResult> answer = client->Query(fmt::format("count({})", LastSampleQuery()));
  if (!answer.ok()) return answer.status();
  const std::vector<Sample>& samples = answer.value().samples;
  return samples.empty() || !std::isfinite(samples.front().value) ? 0
                                                                  : static_cast<int>(samples.front().value);
}

}  // namespace tarmac::fleet
