// SPDX-License-Identifier: Apache-2.0
#include "cli/status_command.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "cli/node_source.h"
#include "cli/status_render.h"
#include "common/terminal.h"
#include "node/node_json.h"

namespace tarmac::cli {
namespace {

constexpr std::chrono::seconds kRecentWindow{10};

void WriteAll(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Waits for `seconds` or SIGINT/SIGTERM (blocked and taken synchronously, so
// no handler state is needed). Returns false when a signal arrived.
bool WaitOrSignal(double seconds) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(seconds);
  timeout.tv_nsec = static_cast<long>((seconds - static_cast<double>(timeout.tv_sec)) * 1e9);
  return sigtimedwait(&set, nullptr, &timeout) < 0;
}

}  // namespace

CLI::App* AddStatusCommand(CLI::App* app, StatusOptions* options) {
  CLI::App* cmd =
      app->add_subcommand("status",
                          "Show every GPU and the processes on it; marks idle GPUs, idle memory holders, "
                          "throttling, lost GPUs and degraded PCIe links");
  cmd->add_flag("--json", options->json,
                "Print every reading as JSON (base units; unsupported readings are absent)");
  cmd->add_option("--watch", options->watch_seconds, "Refresh every SECONDS until Ctrl-C")
      ->expected(0, 1)
      ->default_str("2")
      ->check(CLI::PositiveNumber)
      ->type_name("SECONDS");
  cmd->add_flag("--wide", options->wide,
                "Every line in full (default: fit the terminal's width, else 100 columns)");
  cmd->add_option("--color", options->color, "Colour: auto (on a terminal), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  return cmd;
}

Result<gpu::OpenedBackend> OpenFromOptions(const GlobalOptions& global, Clock* clock, Logger* logger) {
  Result<gpu::BackendOptions> backend = MakeBackendOptions(global);
  if (!backend.ok()) return backend.status();
  LogLevel level = LogLevel::kWarning;
  if (ParseLogLevel(global.log_level, &level)) logger->set_level(level);
  return gpu::OpenBackend(backend.value(), clock, logger);
}

int RunStatus(const GlobalOptions& global, const StatusOptions& options, Clock* clock, Logger* logger) {
  Result<std::unique_ptr<NodeSource>> source = NodeSource::Open(global, clock, logger);
  if (!source.ok()) return ExitWith(source.status());
  bool is_tty = isatty(STDOUT_FILENO) == 1;
  RenderOptions render;
  render.use_color = options.color == "always" || (options.color == "auto" && is_tty);
  render.is_from_agent = source.value()->is_agent();

  if (options.watch_seconds <= 0) {
    Result<node::NodeView> read = source.value()->Read(std::nullopt);
    if (!read.ok()) return ExitWith(read.status());
    const node::NodeView& node_view = read.value();
    if (options.json) {
      WriteAll(node::StatusToJson(node_view).dump(2) + "\n");
    } else {
      render.width = options.wide ? 0 : TerminalColumns(STDOUT_FILENO);
      WriteAll(RenderStatus(node_view, render));
    }
    return kExitOk;
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  render.is_watch = true;
  render.width = options.wide ? 0 : 100;
  do {
    Result<node::NodeView> read = source.value()->Read(kRecentWindow);
    if (!read.ok()) return ExitWith(read.status());
    const node::NodeView& node_view = read.value();
    if (options.json) {
      WriteAll(node::StatusToJson(node_view).dump() + "\n");  // One object per line.
    } else if (is_tty) {
      render.width = options.wide ? 0 : TerminalColumns(STDOUT_FILENO);
      // One row spare: the last line's newline would scroll the header away.
      int rows = TerminalRows(STDOUT_FILENO);
      render.height = rows > 1 ? rows - 1 : 0;
      WriteAll("\033[H\033[2J" + RenderStatus(node_view, render));
    } else {
      WriteAll(RenderStatus(node_view, render) + "\n");
    }
  } while (WaitOrSignal(options.watch_seconds));
  return kExitOk;
}

}  // namespace tarmac::cli
