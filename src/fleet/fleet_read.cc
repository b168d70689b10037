// SPDX-License-Identifier: Apache-2.0
#include "fleet/fleet_read.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "fleet/fleet_queries.h"
#include "node/metric_families.h"

namespace tarmac::fleet {
namespace {

using prom::QueryResult;
using prom::Sample;

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
  std::set<std::string, std::less<>> counted;
  std::set<std::string> uncounted;
  // A second round of questions about the `uncounted` nodes alone: the
  // samples of other nodes are dropped as they come.
  bool is_of_uncounted = false;
  // `fleet idle`: the nodes whose agents export spells (the lengths absent
  // from their answers are 0), and the questions of its GPUs' memory.
  std::set<std::string, std::less<>> spelled;
  std::set<std::string> memory_queries;

  // Takes the answer to asked[i]: folds a reading or the GPU list in at
  // once; keeps the others.
  void Take(size_t i, Result<QueryResult> answer) {
    if (!answer.ok()) {
      if (!refused || i < refused->first) refused = std::make_pair(i, answer.status());
      return;
    }
    QueryResult& a = answer.value();
    if (is_of_uncounted) {
      std::erase_if(a.samples, [this](const Sample& s) { return uncounted.count(s.Label("instance")) == 0; });
    }
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
    // The store's counts, of the nodes whose agents do not count
    // (CountTheRest asks them, and keeps those nodes' samples alone).
    if (promql == NodeInfoQuery()) {
      for (const Sample& s : a.samples) {
        Node(s, "hostname", "tarmac");
        counts[s.Label("instance")].gpus = static_cast<int>(s.value);
      }
      return;
    }
    for (const CountQuery& q : CountQueries()) {
      if (q.promql != promql) continue;
      for (const Sample& s : a.samples) q.apply(s, &counts[s.Label("instance")]);
    }
    if (memory_queries.count(promql) != 0) {
      for (const Sample& s : a.samples)
        readings[ReadingKey(s.Label("instance"), s.Label("gpu"))].memory_used_bytes = FiniteOrNone(s.value);
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

// `instances` in batches of kDownNodesAQuery, a question's worth each.
std::vector<std::vector<std::string>> InBatches(const std::set<std::string>& instances) {
  std::vector<std::vector<std::string>> batches;
  for (const std::string& i : instances) {
    if (batches.empty() || batches.back().size() == kDownNodesAQuery) batches.emplace_back();
    batches.back().push_back(i);
  }
  return batches;
}

// Asks r->asked at `now_unix`, folding each answer in (Reader::Take).
Status AskRound(prom::PromClient* client, double now_unix, Reader* r) {
  client->QueryEachInTurn(r->asked, now_unix,
                          [r](size_t i, Result<QueryResult> answer) { r->Take(i, std::move(answer)); });
  if (r->refused) return r->refused->second;
  r->TakeWarnings();
  return Status::OK();
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
  r->asked.clear();
  for (const std::vector<std::string>& batch : InBatches(down)) {
    r->asked.push_back(DownInfoQuery(batch));
    r->info_queries.insert(r->asked.back());
    r->asked.push_back(DownLastSampleQuery(batch));
    r->kept.insert(r->asked.back());
    r->last_sample_queries.push_back(r->asked.back());
  }
  return AskRound(client, now_unix, r);
}

// The nodes that answer now (they sampled) but are not in `told`, into
// r->uncounted; whether there is one.
bool FindUncounted(const std::set<std::string, std::less<>>& told, Reader* r) {
  auto sampled = r->answers.find(LastSampleQuery());
  if (sampled == r->answers.end()) return false;
  for (const Sample& s : sampled->second.samples) {
    if (told.count(s.Label("instance")) == 0) r->uncounted.insert(s.Label("instance"));
  }
  return !r->uncounted.empty();
}

// Asks `questions` at `now_unix`, keeping the samples of r->uncounted's nodes alone.
Status AskOfUncounted(prom::PromClient* client, double now_unix, std::vector<std::string> questions,
                      Reader* r) {
  r->asked = std::move(questions);
  r->is_of_uncounted = true;
  Status asked = AskRound(client, now_unix, r);
  r->is_of_uncounted = false;
  return asked;
}

// --by node: the nodes that answer now but whose agents do not count their
// own GPUs (agents before tarmac_node_gpus) have them counted by the store,
// at the same instant `now_unix`; a fleet of agents that count asks
// nothing more.
Status CountTheRest(prom::PromClient* client, double now_unix, Reader* r) {
  if (!FindUncounted(r->counted, r)) return Status::OK();
  r->kept.insert({HeldIdleUuidQuery(), IdleHoldersQuery()});
  std::vector<std::string> questions = {NodeInfoQuery(), HeldIdleUuidQuery(), IdleHoldersQuery()};
  for (const CountQuery& q : CountQueries()) questions.push_back(q.promql);
  return AskOfUncounted(client, now_unix, std::move(questions), r);
}

// `fleet idle`: the nodes that answer now but whose agents are not known
// to export spells (neither a spell now nor their own counts, which came
// after the spells) have their idle GPUs named by the marks.
Status MarkTheRest(prom::PromClient* client, double now_unix, Reader* r) {
  for (const Sample& s : r->Kept(CountingNodesQuery())) r->spelled.insert(s.Label("instance"));
  for (const InfoGpu& i : r->info) r->spelled.insert(i.instance);
  if (!FindUncounted(r->spelled, r)) return Status::OK();
  r->info_queries = {MarkQuery(node::family::kGpuIdle), MarkQuery(node::family::kGpuHeldIdle)};
  return AskOfUncounted(client, now_unix, {r->info_queries.begin(), r->info_queries.end()}, r);
}

// `fleet idle`: the memory used on its GPUs that have processes (what the
// HOLDER column says of them), asked of their nodes alone once the GPUs
// are named: an idle GPU without processes holds none worth a question of
// every GPU's series.
Status MemoryOfTheHeld(prom::PromClient* client, double now_unix, Reader* r) {
  std::set<NodeAndGpu> with_processes;
  if (auto it = r->answers.find(ProcessesQuery()); it != r->answers.end()) {
    for (const Sample& s : it->second.samples) {
      if (s.value > 0) with_processes.insert({s.Label("instance"), s.Label("uuid")});
    }
  }
  std::set<std::string> nodes;
  for (const InfoGpu& i : r->info) {
    if (with_processes.count({i.instance, i.uuid}) != 0) nodes.insert(i.instance);
  }
  r->asked.clear();
  for (const std::vector<std::string>& batch : InBatches(nodes)) {
    r->asked.push_back(MemoryUsedQuery(batch));
    r->memory_queries.insert(r->asked.back());
  }
  return r->asked.empty() ? Status::OK() : AskRound(client, now_unix, r);
}

// What a reading of `parts` asks, and which answers it keeps until every
// answer is in.
void Ask(const ReadParts& parts, Reader* r) {
  r->asked = {LastSampleQuery(), DcgmInfoQuery(), "up", kDcgmReadingsQuery, "time()"};
  // `fleet idle` shows no idle holders; it asks which agents count.
  if (parts.idle_only) r->asked.insert(r->asked.end(), {ProcessesQuery(), CountingNodesQuery()});
  if (!parts.by_node && !parts.idle_only)
    r->asked.insert(r->asked.end(), {IdleHoldersQuery(), ProcessesQuery()});
  r->kept = {r->asked.begin(), r->asked.end()};
  r->last_sample_queries = {LastSampleQuery()};
  if (parts.by_node) {  // The agents' counts; the store's for the rest (CountTheRest).
    r->asked.push_back(NodeGpusQuery());
    for (const CountQuery& q : NodeSeriesQueries()) r->asked.push_back(q.promql);
    return;
  }
  // `fleet idle` shows only idle and held-idle GPUs: the spells name them,
  // and no GPU list (80,000 series, the largest answer) is read.
  if (parts.idle_only) {
    r->info_queries = {SpellQuery(node::family::kGpuIdleForSeconds),
                       SpellQuery(node::family::kGpuHeldIdleForSeconds)};
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
  if (parts.idle_only) {
    if (Status rest = MarkTheRest(client, view.taken_at_unix, &r); !rest.ok()) return rest;
    if (Status memory = MemoryOfTheHeld(client, view.taken_at_unix, &r); !memory.ok()) return memory;
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
    if (!g.idle_for_cost && r.spelled.count(key.first) == 0) continue;
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
