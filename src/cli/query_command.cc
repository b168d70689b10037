// SPDX-License-Identifier: Apache-2.0
#include "cli/query_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/node_source.h"
#include "cli/query_fields.h"
#include "cli/status_command.h"
#include "common/split.h"

namespace tarmac::cli {
namespace {

// Keeps the GPUs named in `ids` (index, UUID or PCI bus id), in GPU order.
Status FilterGpus(const std::string& ids, node::NodeView* node_view) {
  if (ids.empty()) return Status::OK();
  std::vector<node::GpuView> kept;
  std::vector<std::string> wanted = SplitCommas(ids, Empties::kKeep);
  for (const std::string& id : wanted) {
    bool found = false;
    for (const node::GpuView& g : node_view->gpus) {
      if (std::to_string(g.info.index) == id || g.info.uuid == id || g.info.pci_bus_id == id) found = true;
    }
    if (!found) return Status::InvalidArgument(fmt::format("No devices were found matching \"{}\"", id));
  }
  for (const node::GpuView& g : node_view->gpus) {
    for (const std::string& id : wanted) {
      if (std::to_string(g.info.index) == id || g.info.uuid == id || g.info.pci_bus_id == id) {
        kept.push_back(g);
        break;
      }
    }
  }
  node_view->gpus = std::move(kept);
  return Status::OK();
}

}  // namespace

CLI::App* AddQueryCommand(CLI::App* app, QueryOptions* options) {
  CLI::App* cmd = app->add_subcommand(
      "query", "nvidia-smi compatible queries: same field names, same CSV (see --help-query-gpu)");
  cmd->add_option("--query-gpu", options->query_gpu,
                  "Comma-separated GPU fields, e.g. index,name,utilization.gpu");
  cmd->add_option("--query-compute-apps", options->query_compute_apps,
                  "Comma-separated process fields, e.g. pid,process_name,used_memory");
  cmd->add_option("--format", options->format, "csv, optionally with ,noheader and ,nounits")
      ->default_str("csv");
  cmd->add_option("-i,--id", options->ids, "Only these GPUs: indices, UUIDs or PCI bus ids, comma-separated");
  cmd->add_flag("--help-query-gpu", options->help_gpu, "List the fields --query-gpu accepts");
  cmd->add_flag("--help-query-compute-apps", options->help_apps,
                "List the fields --query-compute-apps accepts");
  return cmd;
}

int RunQuery(const GlobalOptions& global, const QueryOptions& options, Clock* clock, Logger* logger) {
  if (options.help_gpu) {
    std::fputs(
        ("List of valid properties to query for the switch \"--query-gpu=\":\n\n" + DescribeGpuFields())
            .c_str(),
        stdout);
    return kExitOk;
  }
  if (options.help_apps) {
    std::fputs(("List of valid properties to query for the switch \"--query-compute-apps=\":\n\n" +
                DescribeAppFields())
                   .c_str(),
               stdout);
    return kExitOk;
  }
  if (options.query_gpu.empty() == options.query_compute_apps.empty()) {
    return ExitWith(
        Status::InvalidArgument("query: give exactly one of --query-gpu or --query-compute-apps"));
  }
  Result<CsvFormat> format = ParseCsvFormat(options.format);
  if (!format.ok()) return ExitWith(format.status());
  // Resolve fields before touching the GPUs, so a typo fails fast.
  Result<std::vector<const GpuField*>> gpu_fields = std::vector<const GpuField*>{};
  Result<std::vector<const AppField*>> app_fields = std::vector<const AppField*>{};
  if (!options.query_gpu.empty()) {
    gpu_fields = ResolveGpuFields(options.query_gpu);
    if (!gpu_fields.ok()) return ExitWith(gpu_fields.status());
  } else {
    app_fields = ResolveAppFields(options.query_compute_apps);
    if (!app_fields.ok()) return ExitWith(app_fields.status());
  }
  Result<std::unique_ptr<NodeSource>> source = NodeSource::Open(global, clock, logger);
  if (!source.ok()) return ExitWith(source.status());
  if (!options.query_gpu.empty()) source.value()->LeaveProcessesUnattributed();
  Result<node::NodeView> read = source.value()->Read(std::nullopt);
  if (!read.ok()) return ExitWith(read.status());
  node::NodeView node_view = std::move(read).value();
  Status s = FilterGpus(options.ids, &node_view);
  if (!s.ok()) return ExitWith(s);
  std::string out = !options.query_gpu.empty()
                        ? RenderGpuQuery(node_view, gpu_fields.value(), format.value())
                        : RenderAppQuery(node_view, app_fields.value(), format.value());
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace tarmac::cli
