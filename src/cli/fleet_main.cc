// SPDX-License-Identifier: Apache-2.0
//
// tarmac-fleet: `tarmac fleet ...`, every node at once, read from the
// Prometheus that scrapes them (docs/fleet.md), found through the flags,
// TARMAC_PROMETHEUS_URL or [fleet] in tarmac.toml. A program of its own, which
// `tarmac fleet` runs, so that tarmac itself never loads an HTTP or TLS
// library for its one-node commands.
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "cli/terminal.h"
#include "cluster/cluster_idle.h"
#include "cluster/cluster_pick.h"
#include "cluster/cluster_read.h"
#include "cluster/cluster_render.h"
#include "cluster/cluster_report.h"
#include "cluster/fleet_config.h"
#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/fs.h"
#include "common/terminal_text.h"
#include "common/time_spec.h"
#include "common/units.h"
#include "config/config.h"
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
int RunPick(const cluster::ClusterView& view, const cluster::FleetPickRequest& request, bool json) {
  cluster::FleetPick p = cluster::PickInFleet(view, request);
  if (p.node == nullptr) return Fail(Status::ResourceExhausted("pick: " + p.why_none), kExitError);
  std::string uuids, indices;
  nlohmann::json gpus = nlohmann::json::array();
  for (const cluster::ClusterGpu* g : p.gpus) {
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

}  // namespace

int main(int argc, char** argv) {
  // Answers are read into large buffers that grow and go: mapped on their
  // own and given back when freed, so memory follows what is held (a
  // hostile server's answer is cut at its limit, http/bounded_fetch.h), not
  // glibc's threshold raised by the last free.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  CLI::App app(
      "tarmac fleet: every node's GPUs at once, from the Prometheus that scrapes their agents "
      "(docs/fleet.md)",
      "tarmac fleet");
  app.set_version_flag("--version", std::string("tarmac ") + TARMAC_VERSION);
  app.require_subcommand(1);
  prom::PromOptions prom;
  std::string timeout;
  std::string config_path = "/etc/tarmac/tarmac.toml";
  CLI::Option* config_option =
      app.add_option("--config", config_path,
                     "Read [fleet] from FILE (default /etc/tarmac/tarmac.toml, optional)")
          ->type_name("FILE");
  app.add_option(
         "--prometheus", prom.url,
         "Prometheus (or Thanos, Mimir, VictoriaMetrics) URL (env TARMAC_PROMETHEUS_URL, then [fleet] "
         "prometheus_url; default http://127.0.0.1:9090)")
      ->type_name("URL");
  app.add_option("--bearer-token-file", prom.bearer_token_file, "Send the token in FILE as a bearer token")
      ->type_name("FILE");
  app.add_option("--basic-auth-user", prom.basic_auth_user, "Basic authentication as USER")
      ->type_name("USER");
  app.add_option("--basic-auth-password-file", prom.basic_auth_password_file,
                 "The password for --basic-auth-user")
      ->type_name("FILE");
  app.add_option("--ca-file", prom.ca_file, "https: the CA certificate that signed the server's")
      ->type_name("FILE");
  app.add_option(
         "--timeout", timeout,
         "How long one answer may take, whole, however slowly the server sends it (default: [fleet] timeout, "
         "10s)")
      ->type_name("DURATION");
  std::string max_answer;
  app.add_option(
         "--max-answer-size", max_answer,
         "The most one answer may hold; more ends it with an error (default: [fleet] max_answer_size, 64MiB)")
      ->type_name("SIZE");

  CLI::App* status = app.add_subcommand(
      "status",
      "Every node's GPUs: utilization, memory, power, temperature, idle and held-idle marks, who holds "
      "each; nodes that stopped reporting flagged with since when; totals");
  bool json = false;
  std::string node_regex;
  cluster::ClusterFilter filter;
  status->add_flag("--json", json, "Print the fleet as JSON (docs/fleet.md)");
  status->add_option("--node", node_regex, "Only nodes whose name matches REGEX (whole name, ECMAScript)")
      ->type_name("REGEX");
  status->add_option("--model", filter.model, "Only GPUs whose model contains TEXT (any case)")
      ->type_name("TEXT");
  status->add_flag("--idle", filter.idle_only, "Only idle GPUs (under 5 % utilization now)");
  status->add_flag("--held-idle", filter.held_idle_only, "Only GPUs a process holds memory on at 0 % SM");
  CLI::App* pick = app.add_subcommand(
      "pick", "The node and GPUs that fit a job best now, as tarmac pick judges GPUs (a hint, not a lease)");
  cluster::FleetPickRequest pick_request;
  std::string min_free;
  double max_utilization_pct = 50;
  bool pick_json = false;
  pick->add_option("-n,--count", pick_request.count, "How many GPUs, on one node (default 1)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  pick->add_option("--min-free-memory", min_free, "Only GPUs with at least SIZE free (e.g. 20GiB)")
      ->type_name("SIZE");
  pick->add_option("--max-utilization", max_utilization_pct,
                   "Skip GPUs busier than PCT over the last minute (default 50)")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PCT");
  pick->add_option("--model", pick_request.model, "Only GPUs whose model contains TEXT (any case)")
      ->type_name("TEXT");
  pick->add_flag("--json", pick_json, "Print the pick as JSON");
  CLI::App* idle = app.add_subcommand(
      "idle", "Where GPUs are idle or held idle now: for how long, what it has cost so far, who holds them");
  bool idle_json = false;
  idle->add_flag("--json", idle_json, "Print the list as JSON");
  idle->add_option("--node", node_regex, "Only nodes whose name matches REGEX")->type_name("REGEX");
  idle->add_option("--model", filter.model, "Only GPUs whose model contains TEXT (any case)")
      ->type_name("TEXT");
  CLI::App* report = app.add_subcommand(
      "report",
      "Where the fleet's GPU time and money went over a range: busy, idle, held-idle and unknown "
      "GPU-hours, energy, idle cost and lease time, by node, GPU, model, user, namespace, pod or Slurm job, "
      "from exact counters");
  std::string since = "7d", until = "now", by = "node";
  bool report_json = false, report_csv = false, report_html = false;
  std::string report_out;
  report->add_option("--since", since, "Start: a duration ago (7d, 6h), a date, or @UNIX (default 7d)")
      ->type_name("TIME");
  report->add_option("--until", until, "End (default now)")->type_name("TIME");
  report
      ->add_option(
          "--by", by,
          "Rows: node (default), gpu, model, user (the leases' users), namespace, pod or slurm-job (the "
          "time each held GPUs, busy and idle)")
      ->check(CLI::IsMember({"node", "gpu", "model", "user", "namespace", "pod", "slurm-job"}))
      ->type_name("KIND");
  report->add_flag("--json", report_json, "Print the report as JSON");
  report->add_flag("--csv", report_csv, "Print the rows as CSV");
  report->add_flag("--html", report_html,
                   "One self-contained HTML page: the verdict, a node x hour heatmap and the rows");
  report->add_option("--out", report_out, "Write the report to FILE instead of standard output")
      ->type_name("FILE");
  for (CLI::App* cmd : {status, pick, idle, report}) {
    // The connection options may come after the command name too.
    cmd->fallthrough();
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  // [fleet] from the config file; the flags and TARMAC_PROMETHEUS_URL win.
  Result<config::Config> file = config::LoadConfig(config_path, config_option->count() > 0);
  if (!file.ok()) return Fail(file.status(), kExitUsage);
  const cluster::FleetConfig& fleet = file.value().fleet;
  const char* env_url = std::getenv("TARMAC_PROMETHEUS_URL");
  if (prom.url.empty()) prom.url = env_url != nullptr && *env_url != '\0' ? env_url : fleet.prometheus_url;
  if (prom.url.empty()) prom.url = "http://127.0.0.1:9090";
  const prom::PromOptions configured = cluster::PromOptionsOf(fleet);
  for (std::string prom::PromOptions::*key :
       {&prom::PromOptions::bearer_token_file, &prom::PromOptions::basic_auth_user,
        &prom::PromOptions::basic_auth_password_file, &prom::PromOptions::ca_file}) {
    if ((prom.*key).empty()) prom.*key = configured.*key;
  }
  prom.timeout = configured.timeout;
  prom.max_answer_bytes = configured.max_answer_bytes;
  if (!max_answer.empty()) {
    Result<int64_t> bytes = ParseBytes(max_answer);
    if (!bytes.ok() || bytes.value() < (1 << 20)) {
      return Fail(Status::InvalidArgument("--max-answer-size " + max_answer +
                                          ": a size of 1MiB or more, such as 256MiB"),
                  kExitUsage);
    }
    prom.max_answer_bytes = bytes.value();
  }
  if (!timeout.empty()) {
    Result<std::chrono::milliseconds> wait = ParseDurationWithUnit(timeout);
    if (!wait.ok() || wait.value().count() <= 0) {
      return Fail(Status::InvalidArgument("--timeout " + timeout + ": a duration such as 10s"), kExitUsage);
    }
    prom.timeout = wait.value();
  }
  if (!min_free.empty()) {
    Result<int64_t> bytes = ParseBytes(min_free);
    if (!bytes.ok())
      return Fail(Status::InvalidArgument("--min-free-memory " + min_free + ": a size such as 20GiB"),
                  kExitUsage);
    pick_request.min_free_memory_bytes = bytes.value();
  }
  pick_request.max_utilization_ratio = max_utilization_pct / 100;
  if (!node_regex.empty()) {
    try {
      filter.node = std::regex(node_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Fail(
          Status::InvalidArgument("--node '" + node_regex + "': not a regular expression: " + e.what()),
          kExitUsage);
    }
  }
  Result<std::unique_ptr<prom::PromClient>> client = prom::PromClient::Make(prom);
  if (!client.ok()) return ExitFor(client.status());
  if (report->parsed()) {
    int64_t now = UnixSeconds(RealClock()->WallNow());
    Result<int64_t> from = ParseTimeSpec(since, now);
    if (!from.ok()) return Fail(Status::InvalidArgument("--since: " + from.status().message()), kExitUsage);
    Result<int64_t> to = ParseTimeSpec(until, now);
    if (!to.ok()) return Fail(Status::InvalidArgument("--until: " + to.status().message()), kExitUsage);
    if (from.value() >= to.value())
      return Fail(Status::InvalidArgument("--since must be before --until"), kExitUsage);
    cluster::ReportBy rows = cluster::ReportBy::kNode;
    cluster::ParseReportBy(by, &rows);
    Result<cluster::FleetReport> r =
        cluster::ReadFleetReport(client.value().get(), from.value(), to.value(), rows, report_html);
    if (!r.ok()) return ExitFor(r.status());
    std::string text =
        report_json  ? cluster::ReportToJson(r.value()).dump(2) + "\n"
        : report_csv ? cluster::RenderReportCsv(r.value())
        : report_html
            ? cluster::RenderReportHtml(r.value())
            : cluster::RenderReportText(r.value(), static_cast<size_t>(cli::TerminalColumns(STDOUT_FILENO)));
    if (report_out.empty()) {
      // A text or CSV view holds Prometheus' label values as they came: on
      // a terminal they go through the one terminal filter.
      if (!report_json && !report_html && (!report_csv || isatty(STDOUT_FILENO) == 1))
        text = ForTerminalLines(text);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return kExitOk;
    }
    Status written = WriteFileAtomically(report_out, text);
    if (!written.ok()) return Fail(written, kExitError);
    std::fprintf(stderr, "tarmac: fleet: report written to %s\n", report_out.c_str());
    return kExitOk;
  }
  // One reading of the fleet, ended at the timeout whatever the server does
  // (a report, made of many readings, bounds each answer instead).
  client.value()->LimitTotalTime(prom.timeout);
  Result<cluster::ClusterView> view =
      cluster::ReadCluster(client.value().get(), cluster::ReadParts{pick->parsed(), idle->parsed()});
  if (!view.ok()) return ExitFor(view.status());
  if (pick->parsed()) return RunPick(view.value(), pick_request, pick_json);
  cluster::ClusterView shown = cluster::Filter(view.value(), filter);
  if (idle->parsed()) {
    std::string text = idle_json ? cluster::IdleToJson(shown).dump(2) + "\n"
                                 : ForTerminalLines(cluster::RenderIdleText(
                                       shown, static_cast<size_t>(cli::TerminalColumns(STDOUT_FILENO))));
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  std::string out = json ? cluster::ClusterToJson(shown).dump(2) + "\n"
                         : ForTerminalLines(cluster::RenderClusterText(
                               shown, static_cast<size_t>(cli::TerminalColumns(STDOUT_FILENO))));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}
