// SPDX-License-Identifier: Apache-2.0
#include "cli/lease_commands.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

#include "cli/lease_exit.h"
#include "cli/table.h"
#include "client/agent_client.h"
#include "client/lease_answer.h"
#include "client/lease_request.h"
#include "common/closest_name.h"
#include "common/split.h"
#include "common/terminal_text.h"
#include "common/time_spec.h"
#include "common/units.h"
#include "store/lease_event_json.h"
#include "store/lease_event_kinds.h"

namespace tarmac::cli {
namespace {

using nlohmann::json;

void Print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

double UnixOf(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string LocalTime(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%d %H:%M}", tm);
}

std::string Ago(double seconds) {
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(seconds)));
}

// "0,1", or for a MIG lease its GPU and profile: "0:1g.10gb".
std::string GpuIndices(const sched::Lease& lease) {
  std::string out = fmt::format("{}", fmt::join(lease.gpus, ","));
  return lease.mig_profile.empty() ? out : out + ":" + lease.mig_profile;
}

// When a lease ends, as a person reads it; "-" when it has no end.
std::string EndText(const sched::Lease& lease) {
  return lease.ends_at ? LocalTime(sched::UnixTimeBase().ToUnix(*lease.ends_at)) : std::string("-");
}

}  // namespace

void AddLeaseCommands(CLI::App* app, LeaseCommands* c, GlobalOptions* global) {
  auto socket = [global](CLI::App* cmd) { AddSocketOption(cmd, global); };
  c->reserve = app->add_subcommand(
      "reserve",
      "Reserve GPUs for interactive work (notebooks, debugging) for a while; prints the lease and the "
      "CUDA_VISIBLE_DEVICES line (eval \"$(tarmac reserve ...)\" sets it). tarmac shell opens a shell in "
      "it.");
  AddLeaseAskOptions(c->reserve, &c->reserve_options.ask);
  c->reserve->add_option("--for", c->reserve_options.ask.max_time, "How long, e.g. 2h (at most 30 days)")
      ->required();
  c->reserve->add_flag("--json", c->reserve_options.ask.json, "Print the lease as JSON");
  socket(c->reserve);

  c->extend = app->add_subcommand("extend", "Move a lease's end later");
  c->extend->add_option("lease", c->extend_options.lease,
                        "Lease id (default: $TARMAC_LEASE_ID or your only lease)");
  c->extend->add_option("--by", c->extend_options.by, "How much later, e.g. 1h")->required();
  c->extend->add_flag("--json", c->extend_options.json, "Print the lease as JSON");
  socket(c->extend);

  c->release = app->add_subcommand(
      "release",
      "Give a lease's GPUs back (its processes get SIGTERM, then SIGKILL), or cancel a queued request");
  c->release->add_option("lease", c->release_options.lease,
                         "Lease or request id (default: $TARMAC_LEASE_ID or your only lease)");
  socket(c->release);

  c->leases =
      app->add_subcommand("leases", "Who holds which GPUs, since when, until when, idle for how long");
  c->leases->add_flag("--json", c->leases_options.json, "The agent's answer as JSON (docs/protocol.md)");
  socket(c->leases);

  c->queue =
      app->add_subcommand("queue", "Requests waiting for GPUs, in the order they will be served, and why");
  c->queue->add_flag("--json", c->queue_options.json, "The agent's answer as JSON (docs/protocol.md)");
  socket(c->queue);

  c->events = app->add_subcommand(
      "events",
      "The lease event log: grants, releases, expiries, idle warnings, signals, refusals; who and why");
  c->events->add_flag("--json", c->events_options.json, "As JSON");
  c->events->add_option("--after", c->events_options.after, "Only events after this sequence number")
      ->check(CLI::NonNegativeNumber);
  c->events->add_option("--limit", c->events_options.limit, "At most this many (the newest)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  c->events->add_option(
      "--kind", c->events_options.kinds,
      "Only these kinds, comma-separated (granted, expired, idle_warning, doctor_finding, ...)");
  c->events->add_option("--since", c->events_options.since,
                        "Only events since: a duration ago (1h, 2d), a date, or @UNIX");
  socket(c->events);
}

std::string RenderLeases(const std::vector<sched::LeaseShown>& leases, double now_unix) {
  if (leases.empty()) return "No leases: every GPU is unleased.\n";
  std::vector<std::vector<std::string>> rows;
  std::string notes;
  const sched::TimeBase base = sched::UnixTimeBase();
  for (const sched::LeaseShown& shown : leases) {
    const sched::Lease& l = shown.lease;
    rows.push_back({std::to_string(l.id), l.user, GpuIndices(l), std::string(sched::LeaseKindName(l)),
                    Ago(now_unix - base.ToUnix(l.granted_at)), EndText(l),
                    Ago(static_cast<double>(shown.idle_seconds)), l.command.substr(0, 50)});
    if (!shown.warning.empty())
      notes += fmt::format("lease {} warning: {}\n", l.id, ForTerminal(shown.warning));
    for (const sched::ForeignProcess& f : shown.foreign_processes) {
      notes += fmt::format("lease {} foreign: pid {} of {} on GPU {}: {}\n", l.id, f.pid, ForTerminal(f.user),
                           f.gpu, ForTerminal(f.command.substr(0, 50)));
    }
  }
  return RenderTable({{"LEASE", true},
                      {"USER"},
                      {"GPUS"},
                      {"KIND"},
                      {"HELD", true},
                      {"UNTIL"},
                      {"IDLE", true},
                      {"COMMAND"}},
                     rows) +
         notes;
}

std::string RenderQueue(const std::vector<sched::PendingShown>& queue) {
  if (queue.empty()) return "The queue is empty.\n";
  std::vector<std::vector<std::string>> rows;
  for (const sched::PendingShown& q : queue) {
    const sched::LeaseRequest& r = q.pending.request;
    int gpus = r.wants.uuids.empty() ? r.wants.gpu_count : static_cast<int>(r.wants.uuids.size());
    rows.push_back({std::to_string(q.position), std::to_string(q.pending.id), q.pending.owner.user,
                    std::to_string(gpus), std::string(sched::PriorityName(r.priority)),
                    Ago(static_cast<double>(q.waiting_seconds)), q.reason});
  }
  return RenderTable(
      {{"POS", true}, {"REQUEST", true}, {"USER"}, {"GPUS", true}, {"PRIORITY"}, {"WAITING", true}, {"WHY"}},
      rows);
}

namespace {

int Reserve(client::AgentClient& agent, const LeaseCommands& c) {
  const LeaseAsk& ask = c.reserve_options.ask;
  Result<json> params = client::LeaseParams(ask, "reservation", "reservation");
  if (!params.ok()) return LeaseExit("reserve", params.status());
  Granted granted = AskAndWait(agent, params.value(), "reserve");
  if (granted.exit_code != 0) return granted.exit_code;
  const sched::Lease& l = granted.lease.lease;
  if (ask.json) {
    Print(sched::LeaseShownToJson(granted.lease, sched::UnixTimeBase()).dump(2) + "\n");
    return kExitOk;
  }
  std::string exports = "export";
  for (const auto& [name, value] : client::LeaseEnvironment(l)) exports += " " + name + "=" + value;
  Print(
      fmt::format("# tarmac lease {}: GPU {} until {}; tarmac shell opens a shell in it, tarmac release {} "
                  "gives it back\n{}\n",
                  l.id, GpuIndices(l), EndText(l), l.id, exports));
  return kExitOk;
}

int Extend(client::AgentClient& agent, const LeaseCommands& c) {
  Result<int64_t> id = agent.ChooseLease(c.extend_options.lease, "");
  if (!id.ok()) return LeaseExit("extend", id.status());
  Result<std::chrono::milliseconds> by = ParseDurationWithUnit(c.extend_options.by);
  if (!by.ok()) return LeaseExit("extend", by.status().WithContext("--by"));
  int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(by.value()).count();
  Result<json> l = agent.Call("lease.extend", {{"id", id.value()}, {"seconds", seconds}});
  if (!l.ok()) return LeaseExit("extend", l.status());
  Result<sched::LeaseShown> extended = sched::LeaseShownFromJson(l.value(), sched::UnixTimeBase());
  if (!extended.ok()) return LeaseExit("extend", Status::Corruption("agent: " + extended.status().message()));
  Print(c.extend_options.json
            ? l.value().dump(2) + "\n"
            : fmt::format("lease {} now ends at {}\n", id.value(), EndText(extended.value().lease)));
  return kExitOk;
}

int Release(client::AgentClient& agent, const LeaseCommands& c) {
  Result<int64_t> id = agent.ChooseLease(c.release_options.lease, "");
  if (!id.ok()) return LeaseExit("release", id.status());
  Result<client::ReleaseAnswer> r = agent.ReleaseLease(id.value());
  if (!r.ok()) return LeaseExit("release", r.status());
  if (r.value().was_cancelled) {
    Print(fmt::format("request {} cancelled\n", id.value()));
  } else if (r.value().was_ended) {
    Print(fmt::format("lease {} had already ended: {}\n", id.value(), ForTerminal(r.value().reason)));
  } else {
    Print(fmt::format("lease {} released\n", id.value()));
  }
  return kExitOk;
}

// `tarmac events`: pages through the log, keeping the newest --limit that
// match --kind and --since.
int Events(client::AgentClient& agent, const LeaseCommands& c, Clock* clock) {
  client::CallOptions once;
  once.patience = std::chrono::milliseconds(0);
  const ListOptions& o = c.events_options;
  std::set<std::string> kinds;
  for (const std::string& k : SplitCommas(o.kinds)) {
    const std::vector<std::string>& known = store::LeaseEventKinds();
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      return LeaseExit("events", Status::InvalidArgument(fmt::format(
                                     "--kind: '{}' is no event kind{} (kinds: {})", ForTerminal(k),
                                     DidYouMean(k, known), fmt::join(known, ", "))));
    }
    kinds.insert(k);
  }
  double since_unix = 0;
  if (!o.since.empty()) {
    Result<int64_t> since = ParseTimeSpec(o.since, UnixSeconds(clock->WallNow()));
    if (!since.ok()) return LeaseExit("events", since.status().WithContext("--since"));
    since_unix = static_cast<double>(since.value());
  }
  auto wanted = [&](const store::LeaseEvent& e) {
    return (kinds.empty() || kinds.count(e.kind) != 0) && e.at_unix >= since_unix;
  };
  std::vector<store::LeaseEvent> all;
  int64_t after = o.after;
  for (;;) {  // Page through, keeping the newest `limit`.
    Result<json> r = agent.Call("events", {{"after", after}, {"limit", 10000}}, once);
    if (!r.ok()) return LeaseExit("events", r.status());
    Result<std::vector<store::LeaseEvent>> page = store::LeaseEventsFromJson(r.value());
    if (!page.ok()) return LeaseExit("events", Status::Corruption("agent: " + page.status().message()));
    for (const store::LeaseEvent& e : page.value()) {
      if (wanted(e)) all.push_back(e);
    }
    if (page.value().size() < 10000) break;
    after = page.value().back().seq;  // Paged by the unfiltered log.
    if (static_cast<int64_t>(all.size()) > 4 * o.limit) all.erase(all.begin(), all.end() - o.limit);
  }
  if (static_cast<int64_t>(all.size()) > o.limit) all.erase(all.begin(), all.end() - o.limit);
  if (o.json) {
    json list = json::array();
    for (const store::LeaseEvent& e : all) list.push_back(store::LeaseEventToJson(e));
    Print(json{{"events", list}}.dump(2) + "\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const store::LeaseEvent& e : all) {
    rows.push_back({std::to_string(e.seq), LocalTime(e.at_unix), std::to_string(e.lease_id), e.kind, e.user,
                    e.actor, e.detail});
  }
  Print(rows.empty()
            ? (kinds.empty() && since_unix == 0 ? "No lease events yet.\n" : "No events match.\n")
            : RenderTable({{"SEQ", true}, {"TIME"}, {"LEASE", true}, {"EVENT"}, {"USER"}, {"BY"}, {"DETAIL"}},
                          rows, 100));
  return kExitOk;
}

}  // namespace

int RunLeaseCommands(const GlobalOptions& global, const LeaseCommands& c, Clock* clock) {
  if (c.reserve == nullptr) return -1;  // Not registered: another command was named.
  client::AgentClient agent(global.socket);
  client::CallOptions once;
  once.patience = std::chrono::milliseconds(0);
  if (c.reserve->parsed()) return Reserve(agent, c);
  if (c.extend->parsed()) return Extend(agent, c);
  if (c.release->parsed()) return Release(agent, c);
  for (auto [cmd, method, options] :
       {std::tuple{c.leases, "leases", &c.leases_options}, std::tuple{c.queue, "queue", &c.queue_options}}) {
    if (!cmd->parsed()) continue;
    Result<json> r = agent.Call(method, json::object(), once);
    if (!r.ok()) return LeaseExit(method, r.status());
    if (options->json) {
      Print(r.value().dump(2) + "\n");
    } else if (std::string(method) == "leases") {
      Result<std::vector<sched::LeaseShown>> leases = client::LeasesFromJson(r.value());
      if (!leases.ok()) return LeaseExit(method, leases.status());
      Print(RenderLeases(leases.value(), UnixOf(clock->WallNow())));
    } else {
      Result<std::vector<sched::PendingShown>> queue = client::QueueFromJson(r.value());
      if (!queue.ok()) return LeaseExit(method, queue.status());
      Print(RenderQueue(queue.value()));
    }
    return kExitOk;
  }
  if (c.events->parsed()) return Events(agent, c, clock);
  return -1;
}

}  // namespace tarmac::cli
