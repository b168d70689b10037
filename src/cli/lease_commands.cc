// SPDX-License-Identifier: Apache-2.0
#include "cli/lease_commands.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <set>

#include "cli/lease_exit.h"
#include "cli/table.h"
#include "client/agent_client.h"
#include "client/lease_answer.h"
#include "client/lease_request.h"
#include "common/split.h"
#include "common/terminal_text.h"
#include "common/time_spec.h"
#include "common/units.h"

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
std::string GpuIndices(const json& lease) {
  std::string out;
  for (const json& g : lease.value("gpus", json::array()))
    out += (out.empty() ? "" : ",") + std::to_string(g.get<int>());
  std::string profile = lease.value("mig_profile", std::string());
  return profile.empty() ? out : out + ":" + profile;
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

std::string RenderLeases(const json& answer, double now_unix) {
  const json& leases = answer["leases"];
  if (leases.empty()) return "No leases: every GPU is unleased.\n";
  std::vector<std::vector<std::string>> rows;
  std::string notes;
  for (const json& l : leases) {
    int64_t id = l.value("id", int64_t{0});
    std::string until = l["ends_at_unix"].is_null() ? "-" : LocalTime(l["ends_at_unix"].get<double>());
    rows.push_back({std::to_string(id), l.value("user", std::string("?")), GpuIndices(l),
                    l.value("kind", std::string()), Ago(now_unix - l.value("granted_at_unix", now_unix)),
                    until, Ago(static_cast<double>(l.value("idle_seconds", int64_t{0}))),
                    l.value("command", std::string()).substr(0, 50)});
    if (l.value("warning", json()).is_string()) {
      notes += fmt::format("lease {} warning: {}\n", id, ForTerminal(l["warning"].get<std::string>()));
    }
    for (const json& f : l.value("foreign_processes", json::array())) {
      notes += fmt::format("lease {} foreign: pid {} of {} on GPU {}: {}\n", id, f.value("pid", int64_t{0}),
                           ForTerminal(f.value("user", std::string("?"))), f.value("gpu", 0),
                           ForTerminal(f.value("command", std::string()).substr(0, 50)));
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

std::string RenderQueue(const json& answer) {
  const json& queue = answer["queue"];
  if (queue.empty()) return "The queue is empty.\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& q : queue) {
    rows.push_back({std::to_string(q.value("position", 0)), std::to_string(q.value("id", int64_t{0})),
                    q.value("user", std::string("?")), std::to_string(q.value("gpus", 0)),
                    q.value("priority", std::string()),
                    Ago(static_cast<double>(q.value("waiting_seconds", int64_t{0}))),
                    q.value("reason", std::string())});
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
  const json& l = granted.lease;
  if (ask.json) {
    Print(l.dump(2) + "\n");
    return kExitOk;
  }
  std::string exports = "export";
  for (const auto& [name, value] : client::LeaseEnvironment(l)) exports += " " + name + "=" + value;
  Print(
      fmt::format("# tarmac lease {}: GPU {} until {}; tarmac shell opens a shell in it, tarmac release {} "
                  "gives it back\n{}\n",
                  l["id"].get<int64_t>(), GpuIndices(l), LocalTime(l["ends_at_unix"].get<double>()),
                  l["id"].get<int64_t>(), exports));
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
  Print(c.extend_options.json ? l.value().dump(2) + "\n"
                              : fmt::format("lease {} now ends at {}\n", id.value(),
                                            LocalTime(l.value()["ends_at_unix"].get<double>())));
  return kExitOk;
}

int Release(client::AgentClient& agent, const LeaseCommands& c) {
  Result<int64_t> id = agent.ChooseLease(c.release_options.lease, "");
  if (!id.ok()) return LeaseExit("release", id.status());
  Result<json> r = agent.ReleaseLease(id.value());
  if (!r.ok()) return LeaseExit("release", r.status());
  if (r.value().contains("cancelled")) {
    Print(fmt::format("request {} cancelled\n", id.value()));
  } else if (r.value()["released"].is_null()) {
    Print(fmt::format("lease {} had already ended: {}\n", id.value(),
                      ForTerminal(r.value().value("reason", ""))));
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
  for (const std::string& k : SplitCommas(o.kinds)) kinds.insert(k);
  double since_unix = 0;
  if (!o.since.empty()) {
    Result<int64_t> since = ParseTimeSpec(o.since, UnixSeconds(clock->WallNow()));
    if (!since.ok()) return LeaseExit("events", since.status().WithContext("--since"));
    since_unix = static_cast<double>(since.value());
  }
  auto wanted = [&](const json& e) {
    return (kinds.empty() || kinds.count(e.value("kind", std::string())) != 0) &&
           e.value("at_unix", 0.0) >= since_unix;
  };
  json all = json::array();
  int64_t after = o.after;
  for (;;) {  // Page through, keeping the newest `limit`.
    Result<json> r = agent.Call("events", {{"after", after}, {"limit", 10000}}, once);
    if (!r.ok()) return LeaseExit("events", r.status());
    const json& page = r.value()["events"];
    for (const json& e : page) {
      if (wanted(e)) all.push_back(e);
    }
    if (page.size() < 10000) break;
    after = page.back()["seq"].get<int64_t>();  // Paged by the unfiltered log.
    if (static_cast<int64_t>(all.size()) > 4 * o.limit) all.erase(all.begin(), all.end() - o.limit);
  }
  if (static_cast<int64_t>(all.size()) > o.limit) all.erase(all.begin(), all.end() - o.limit);
  if (o.json) {
    Print(json{{"events", all}}.dump(2) + "\n");
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const json& e : all) {
    rows.push_back({std::to_string(e.value("seq", int64_t{0})), LocalTime(e.value("at_unix", 0.0)),
                    std::to_string(e.value("lease", int64_t{0})), e.value("kind", std::string()),
                    e.value("user", std::string()), e.value("actor", std::string()),
                    e.value("detail", std::string())});
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
    Print(options->json                     ? r.value().dump(2) + "\n"
          : std::string(method) == "leases" ? RenderLeases(r.value(), UnixOf(clock->WallNow()))
                                            : RenderQueue(r.value()));
    return kExitOk;
  }
  if (c.events->parsed()) return Events(agent, c, clock);
  return -1;
}

}  // namespace tarmac::cli
