// SPDX-License-Identifier: Apache-2.0
//
// tarmac-fleet: `tarmac fleet ...`, every node at once, read from the
// Prometheus that scrapes them (docs/fleet.md), found through the flags,
// TARMAC_PROMETHEUS_URL or [fleet] in tarmac.toml. A program of its own, which
// `tarmac fleet` runs, so that tarmac itself never loads an HTTP or TLS
// library for its one-node commands.
#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "cli/completion.h"
#include "cli/help_format.h"
#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/fs.h"
#include "common/terminal.h"
#include "common/terminal_text.h"
#include "common/time_spec.h"
#include "common/units.h"
#include "config/config.h"
#include "fleet/fleet_config.h"
#include "fleet/fleet_idle.h"
#include "fleet/fleet_pick.h"
#include "fleet/fleet_read.h"
#include "fleet/fleet_render.h"
#include "fleet/fleet_report.h"
#include "prom/prom_client.h"

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

namespace {

using namespace tarmac;  // NOLINT: main only.

int Fail(const Status& s, int code) {
  std::fprintf(stderr, "tarmac: fleet: %s\n", ForTerminalLines(s.message()).c_str());
  return code;
}

int ExitFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return Fail(s, kExitUsage);
    case StatusCode::kUnavailable:  // Prometheus unreachable: 69.
      Fail(s, kExitNoAgent);
      std::fprintf(stderr,
                   "tarmac: fleet: is Prometheus there? (--prometheus, TARMAC_PROMETHEUS_URL, "
                   "[fleet] prometheus_url)\n");
      return kExitNoAgent;
    default:
      return Fail(s, kExitError);
  }
}

// Prints the pick: "NODE UUID,UUID" on stdout (or JSON), and on a
// terminal how to lease them there.
int RunPick(const fleet::FleetView& view, const fleet::FleetPickRequest& request, bool json) {
  fleet::FleetPick p = fleet::PickInFleet(view, request);
  if (p.node == nullptr) return Fail(Status::ResourceExhausted("pick: " + p.why_none), kExitError);
  std::string uuids, indices;
  nlohmann::json gpus = nlohmann::json::array();
  for (const fleet::FleetGpu* g : p.gpus) {
    uuids += (uuids.empty() ? "" : ",") + g->uuid;
    indices += (indices.empty() ? "" : ",") + std::to_string(g->index);
    gpus.push_back({{"index", g->index}, {"uuid", g->uuid}, {"model", g->model}});
  }
  std::string lease = "ssh " + p.node->name + " tarmac run --gpu " + indices + " -- CMD";
  if (json) {
    nlohmann::json j = {{"node", p.node->name},
                        {"instance", p.node->instance},
                        {"gpus", gpus},
                        {"lease_with", lease},
                        {"is_lease", false}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s %s\n", ForTerminal(p.node->name).c_str(), ForTerminal(uuids).c_str());
  if (isatty(STDERR_FILENO) == 1) {
    std::fprintf(stderr, "tarmac: fleet: a hint, not a lease; to hold them: %s\n",
                 ForTerminal(lease).c_str());
  }
  return kExitOk;
}

// Everything the line can say, with its defaults.
struct FleetLine {
  prom::PromOptions prom;
  std::string timeout;
  std::string max_answer;
  std::string config_path = "/etc/tarmac/tarmac.toml";
  CLI::Option* config_option = nullptr;
  CLI::App* status = nullptr;
  CLI::App* pick = nullptr;
  CLI::App* idle = nullptr;
  CLI::App* report = nullptr;
  // status and idle
  std::string status_by;  // gpu, node, or "": text by node past fleet::kNodesListedByGpu nodes.
  bool json = false;
  bool idle_json = false;
  std::string node_regex;
  fleet::FleetFilter filter;
  // pick
  fleet::FleetPickRequest pick_request;
  std::string min_free;
  double max_utilization_pct = 50;
  bool pick_json = false;
  // report
  std::string since = "7d", until = "now", by = "node";
  bool report_json = false, report_csv = false, report_html = false;
  std::string report_out;
};

// How to reach Prometheus: the options every command takes.
void AddConnectionOptions(CLI::App* app, FleetLine* line) {
  prom::PromOptions& prom = line->prom;
  line->config_option = app->add_option("--config", line->config_path,
                                        "Read [fleet] from FILE (default /etc/tarmac/tarmac.toml, optional)")
                            ->type_name("FILE");
  app->add_option(
         "--prometheus", prom.url,
         "Prometheus (or Thanos, Mimir, VictoriaMetrics) URL (env TARMAC_PROMETHEUS_URL, then [fleet] "
         "prometheus_url; default http://127.0.0.1:9090)")
      ->type_name("URL");
  app->add_option("--bearer-token-file", prom.bearer_token_file, "Send the token in FILE as a bearer token")
      ->type_name("FILE");
  app->add_option("--basic-auth-user", prom.basic_auth_user, "Basic authentication as USER")
      ->type_name("USER");
  app->add_option("--basic-auth-password-file", prom.basic_auth_password_file,
                  "The password for --basic-auth-user")
      ->type_name("FILE");
  app->add_option("--ca-file", prom.ca_file, "https: the CA certificate that signed the server's")
      ->type_name("FILE");
  app->add_option(
         "--timeout", line->timeout,
         "How long one answer may take, whole, however slowly the server sends it (default: [fleet] timeout, "
         "10s; for report, [fleet] report_timeout, 2m)")
      ->type_name("DURATION");
  app->add_option(
         "--max-answer-size", line->max_answer,
         "The most one answer may hold; more ends it with an error (default: [fleet] max_answer_size, 64MiB)")
      ->type_name("SIZE");
}

void AddViewCommands(CLI::App* app, FleetLine* line) {
  line->status = app->add_subcommand(
      "status",
      "Every node's GPUs: utilization, memory, power, temperature, idle and held-idle marks, who holds "
      "each; nodes that stopped reporting flagged with since when; totals");
  CLI::App* status = line->status;
  status->add_flag("--json", line->json, "Print the fleet as JSON (docs/fleet.md)");
  status
      ->add_option("--node", line->node_regex, "Only nodes whose name matches REGEX (whole name, ECMAScript)")
      ->type_name("REGEX");
  status->add_option("--model", line->filter.model, "Only GPUs whose model contains TEXT (any case)")
      ->type_name("TEXT");
  status->add_flag("--idle", line->filter.idle_only, "Only idle GPUs (under 5 % utilization now)");
  status->add_flag("--held-idle", line->filter.held_idle_only,
                   "Only GPUs a process holds memory on at 0 % SM");
  status
      ->add_option(
          "--by", line->status_by,
          fmt::format("gpu: every GPU, a line each; node: a line a node, its GPUs as its agent counts them "
                      "(idle, held idle, leased, lost, drain, mean utilization). Default: gpu, but the "
                      "text goes by node past {} nodes",
                      fleet::kNodesListedByGpu))
      ->check(CLI::IsMember({"gpu", "node"}))
      ->type_name("gpu|node");
  line->pick = app->add_subcommand(
      "pick", "The node and GPUs that fit a job best now, as tarmac pick judges GPUs (a hint, not a lease)");
  CLI::App* pick = line->pick;
  pick->add_option("-n,--count", line->pick_request.count, "How many GPUs, on one node (default 1)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  pick->add_option("--min-free-memory", line->min_free, "Only GPUs with at least SIZE free (e.g. 20GiB)")
      ->type_name("SIZE");
  pick->add_option("--max-utilization", line->max_utilization_pct,
                   "Skip GPUs busier than PCT over the last minute (default 50)")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PCT");
  pick->add_option("--model", line->pick_request.model, "Only GPUs whose model contains TEXT (any case)")
      ->type_name("TEXT");
  pick->add_flag("--json", line->pick_json, "Print the pick as JSON");
  line->idle = app->add_subcommand(
      "idle", "Where GPUs are idle or held idle now: for how long, what it has cost so far, who holds them");
  line->idle->add_flag("--json", line->idle_json, "Print the list as JSON");
  line->idle->add_option("--node", line->node_regex, "Only nodes whose name matches REGEX")
      ->type_name("REGEX");
  line->idle->add_option("--model", line->filter.model, "Only GPUs whose model contains TEXT (any case)")
      ->type_name("TEXT");
}

void AddReportCommand(CLI::App* app, FleetLine* line) {
  line->report = app->add_subcommand(
      "report",
      "Where the fleet's GPU time and money went over a range: busy, idle, held-idle and unknown "
      "GPU-hours, energy, idle cost and lease time, by node, GPU, model, user, namespace, pod or Slurm job, "
      "from exact counters");
  CLI::App* report = line->report;
  report->add_option("--since", line->since, "Start: a duration ago (7d, 6h), a date, or @UNIX (default 7d)")
      ->type_name("TIME");
  report->add_option("--until", line->until, "End (default now)")->type_name("TIME");
  report
      ->add_option(
          "--by", line->by,
          "Rows: node (default), gpu, model, user (the leases' users), namespace, pod or slurm-job (the "
          "time each held GPUs, busy and idle)")
      ->check(CLI::IsMember(fleet::ReportByNames()))
      ->type_name("KIND");
  report->add_flag("--json", line->report_json, "Print the report as JSON");
  report->add_flag("--csv", line->report_csv, "Print the rows as CSV");
  report->add_flag("--html", line->report_html,
                   "One self-contained HTML page: the verdict, a node x hour heatmap and the rows");
  report->add_option("--out", line->report_out, "Write the report to FILE instead of standard output")
      ->type_name("FILE");
}

// Fills the connection from [fleet] in the config file, where the flags and
// TARMAC_PROMETHEUS_URL said nothing; and the values the flags gave as text.
Status ResolveLine(FleetLine* line) {
  prom::PromOptions& prom = line->prom;
  Result<config::Config> file = config::LoadConfig(line->config_path, line->config_option->count() > 0);
  if (!file.ok()) return file.status();
  const fleet::FleetConfig& fleet = file.value().fleet;
  const char* env_url = std::getenv("TARMAC_PROMETHEUS_URL");
  if (prom.url.empty()) prom.url = env_url != nullptr && *env_url != '\0' ? env_url : fleet.prometheus_url;
  if (prom.url.empty()) prom.url = "http://127.0.0.1:9090";
  const prom::PromOptions configured = fleet::PromOptionsOf(fleet);
  for (std::string prom::PromOptions::*key :
       {&prom::PromOptions::bearer_token_file, &prom::PromOptions::basic_auth_user,
        &prom::PromOptions::basic_auth_password_file, &prom::PromOptions::ca_file}) {
    if ((prom.*key).empty()) prom.*key = configured.*key;
  }
  // A report's answers each read a long range of every node: its own.
  prom.timeout =
      line->report != nullptr && line->report->parsed() ? fleet.report_timeout : configured.timeout;
  prom.max_answer_bytes = configured.max_answer_bytes;
  if (!line->max_answer.empty()) {
    Result<int64_t> bytes = ParseBytes(line->max_answer);
    if (!bytes.ok() || bytes.value() < (1 << 20)) {
      return Status::InvalidArgument("--max-answer-size " + line->max_answer +
                                     ": a size of 1MiB or more, such as 256MiB");
    }
    prom.max_answer_bytes = bytes.value();
  }
  if (!line->timeout.empty()) {
    Result<std::chrono::milliseconds> wait = ParseDurationWithUnit(line->timeout);
    if (!wait.ok() || wait.value().count() <= 0) {
      return Status::InvalidArgument("--timeout " + line->timeout + ": a duration such as 10s");
    }
    prom.timeout = wait.value();
  }
  if (!line->min_free.empty()) {
    Result<int64_t> bytes = ParseBytes(line->min_free);
    if (!bytes.ok())
      return Status::InvalidArgument("--min-free-memory " + line->min_free + ": a size such as 20GiB");
    line->pick_request.min_free_memory_bytes = bytes.value();
  }
  line->pick_request.max_utilization_ratio = line->max_utilization_pct / 100;
  if (!line->node_regex.empty()) {
    try {
      line->filter.node = std::regex(line->node_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status::InvalidArgument("--node '" + line->node_regex +
                                     "': not a regular expression: " + e.what());
    }
  }
  return Status::OK();
}

size_t Columns() { return static_cast<size_t>(TerminalColumns(STDOUT_FILENO)); }

int RunReport(const FleetLine& line, prom::PromClient* client) {
  int64_t now = UnixSeconds(RealClock()->WallNow());
  Result<int64_t> from = ParseTimeSpec(line.since, now);
  if (!from.ok()) return Fail(Status::InvalidArgument("--since: " + from.status().message()), kExitUsage);
  Result<int64_t> to = ParseTimeSpec(line.until, now);
  if (!to.ok()) return Fail(Status::InvalidArgument("--until: " + to.status().message()), kExitUsage);
  if (from.value() >= to.value())
    return Fail(Status::InvalidArgument("--since must be before --until"), kExitUsage);
  fleet::ReportBy rows = fleet::ReportBy::kNode;
  fleet::ParseReportBy(line.by, &rows);
  Result<fleet::FleetReport> r =
      fleet::ReadFleetReport(client, from.value(), to.value(), rows, line.report_html);
  if (!r.ok()) return ExitFor(r.status());
  std::string text = line.report_json   ? fleet::ReportToJson(r.value()).dump(2) + "\n"
                     : line.report_csv  ? fleet::RenderReportCsv(r.value())
                     : line.report_html ? fleet::RenderReportHtml(r.value())
                                        : fleet::RenderReportText(r.value(), Columns());
  if (line.report_out.empty()) {
    // A text or CSV view holds Prometheus' label values as they came: on
    // a terminal they go through the one terminal filter.
    if (!line.report_json && !line.report_html && (!line.report_csv || isatty(STDOUT_FILENO) == 1))
      text = ForTerminalLines(text);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  Status written = WriteFileAtomically(line.report_out, text);
  if (!written.ok()) return Fail(written, kExitError);
  std::fprintf(stderr, "tarmac: fleet: report written to %s\n", line.report_out.c_str());
  return kExitOk;
}

// status, idle and pick: one reading of the fleet, ended at the timeout
// whatever the server does (a report, made of many readings, bounds each
// answer instead).
int RunView(const FleetLine& line, prom::PromClient* client) {
  client->LimitTotalTime(line.prom.timeout);
  const fleet::FleetFilter& f = line.filter;
  const bool picks_gpus = !f.model.empty() || f.idle_only || f.held_idle_only;
  if (line.status->parsed() && line.status_by == "node" && picks_gpus) {
    return Fail(Status::InvalidArgument("status: --by node counts each node's GPUs; --model, --idle and "
                                        "--held-idle pick GPUs: use them with --by gpu"),
                kExitUsage);
  }
  // The text, unless told, goes by node past a few hundred nodes: how many
  // answer now is one small question.
  std::optional<int> nodes_now;
  if (line.status->parsed() && line.status_by.empty() && !line.json && !picks_gpus) {
    Result<int> n = fleet::CountNodesNow(client);
    if (!n.ok()) return ExitFor(n.status());
    nodes_now = n.value();
  }
  const bool by_node = line.status->parsed() && fleet::GoesByNode(line.status_by, nodes_now);
  Result<fleet::FleetView> view =
      fleet::ReadFleet(client, fleet::ReadParts{line.pick->parsed(), line.idle->parsed(), by_node});
  if (!view.ok()) return ExitFor(view.status());
  if (line.pick->parsed()) return RunPick(view.value(), line.pick_request, line.pick_json);
  // A copy only when a filter leaves some out: a large fleet is held once.
  const bool is_filtered = f.node || picks_gpus;
  fleet::FleetView filtered;
  if (is_filtered) filtered = fleet::Filter(view.value(), f);
  const fleet::FleetView& shown = is_filtered ? filtered : view.value();
  if (by_node) {
    std::string text = line.json ? fleet::NodesToJson(shown).dump(2) + "\n"
                                 : ForTerminalLines(fleet::RenderNodesText(shown, Columns()));
    if (line.status_by.empty()) {
      text += fmt::format("\n(a line a node past {} nodes; --by gpu lists every GPU)\n",
                          fleet::kNodesListedByGpu);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  if (!line.idle->parsed() && line.json) {
    fleet::WriteFleetJson(shown, stdout);
    return kExitOk;
  }
  std::string text = line.idle->parsed()
                         ? (line.idle_json ? fleet::IdleToJson(shown).dump(2) + "\n"
                                           : ForTerminalLines(fleet::RenderIdleText(shown, Columns())))
                         : ForTerminalLines(fleet::RenderFleetText(shown, Columns()));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // Answers are read into large buffers that grow and go: mapped on their
  // own and given back when freed, so memory follows what is held (a
  // hostile server's answer is cut at its limit, http/bounded_fetch.h), not
  // glibc's threshold raised by the last free.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  // One heap for every thread: the workers that fetch answers decode them
  // one at a time (prom_client.h), and a heap per worker would keep each
  // one's freed answers as its own (at 10,000 nodes: 149 MiB against 250
  // to 290 MiB for `fleet status --json`).
  mallopt(M_ARENA_MAX, 1);
  CLI::App app(
      "tarmac fleet: every node's GPUs at once, from the Prometheus that scrapes their agents "
      "(docs/fleet.md)",
      "tarmac fleet");
  app.set_version_flag("--version", std::string("tarmac ") + TARMAC_VERSION);
  app.formatter(std::make_shared<cli::HelpFormatter>(static_cast<size_t>(TerminalColumns(STDOUT_FILENO))));
  app.require_subcommand(1);
  FleetLine line;
  AddConnectionOptions(&app, &line);
  AddViewCommands(&app, &line);
  AddReportCommand(&app, &line);
  for (CLI::App* cmd : {line.status, line.pick, line.idle, line.report}) {
    // The connection options may come after the command name too.
    cmd->fallthrough();
  }
  // tarmac completion asks for the commands above (cli/completion.h).
  if (argc == 2 && std::string(argv[1]) == cli::kCompletionEntriesFlag) {
    std::fputs(cli::CompletionEntries(app).c_str(), stdout);
    return kExitOk;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (Status resolved = ResolveLine(&line); !resolved.ok()) return Fail(resolved, kExitUsage);
  Result<std::unique_ptr<prom::PromClient>> client = prom::PromClient::Make(line.prom);
  if (!client.ok()) return ExitFor(client.status());
  return line.report->parsed() ? RunReport(line, client.value().get()) : RunView(line, client.value().get());
}
