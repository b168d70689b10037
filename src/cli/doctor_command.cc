// SPDX-License-Identifier: Apache-2.0
#include "cli/doctor_command.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "cli/node_source.h"
#include "client/agent_client.h"
#include "common/exit_codes.h"
#include "common/host_name.h"
#include "common/split.h"
#include "common/units.h"
#include "doctor/doctor_render.h"
#include "doctor/gather.h"
#include "doctor/playbook.h"
#include "ipc/protocol.h"
#include "node/node_json.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::cli {
namespace {

constexpr uint64_t kThermal = nvidia::kReasonSwThermalSlowdown | nvidia::kReasonHwThermalSlowdown;
constexpr uint64_t kPower = nvidia::kReasonSwPowerCap | nvidia::kReasonHwPowerBrakeSlowdown;
constexpr uint64_t kHardware = nvidia::kReasonHwSlowdown;

// Throttling over the last hour of history, and how long each MIG
// instance sat empty; empty without a history.
// Adds one reading's throttle reasons to each GPU's window (each reading
// standing for `seconds`).
void AddReading(const node::NodeView& node_view, double seconds,
                std::map<int, doctor::ThrottleWindow>* windows) {
  for (const node::GpuView& g : node_view.gpus) {
    if (!g.sample.clock_event_reasons) continue;
    uint64_t r = *g.sample.clock_event_reasons;
    doctor::ThrottleWindow& w = (*windows)[g.info.index];
    w.seconds += seconds;
    if (r & kThermal) w.thermal_seconds += seconds;
    if (r & kPower) w.power_seconds += seconds;
    if (r & kHardware) w.hardware_seconds += seconds;
  }
}

std::set<std::string> Names(const std::vector<std::string>& values) {
  std::set<std::string> out;
  for (const std::string& v : values) {
    for (std::string& name : SplitCommas(v)) out.insert(std::move(name));
  }
  return out;
}

}  // namespace

CLI::App* AddDoctorCommand(CLI::App* app, DoctorOptions* o, GlobalOptions* global) {
  std::string checks;
  for (const doctor::CheckInfo& c : doctor::AllChecks()) {
    checks += fmt::format("\n  {:<12}{:<14}{}", c.name, doctor::QuestionName(c.question), c.what);
  }
  CLI::App* cmd = app->add_subcommand(
      "doctor",
      "Walk the fast-diagnosis playbook: are the GPUs busy and healthy, is the data pipeline feeding "
      "them, is the interconnect healthy, is the scheduler telling the truth");
  cmd->footer(
      "Checks (for --only and --skip, with the questions gpus, pipeline, interconnect, scheduler):" + checks +
      "\n\nExit codes: 0 nothing above info, 4 a warning, 5 a critical finding, 1 error, 2 usage.");
  cmd->add_flag("--json", o->json, "Print the findings as JSON");
  cmd->add_flag("--quick", o->quick, "A short sampling window (0.5 s) for a fast answer");
  cmd->add_option("--only", o->only, "Run only these checks or questions (comma-separated)")->delimiter(',');
  cmd->add_option("--skip", o->skip, "Leave out these checks or questions (comma-separated)")->delimiter(',');
  cmd->add_option("--window", o->window_seconds,
                  "Seconds to sample CPU and throttling over (default 2; 0.5 quick)")
      ->check(CLI::Range(0.1, 60.0));
  cmd->add_option("--host-root", o->host_root,
                  "Read /proc, /sys, /dev/kmsg and /etc under DIR (a host mounted into a container)")
      ->default_str("/");
  cmd->add_option("--color", o->color, "Colour: auto (on a terminal), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->add_option("--storage", o->storage,
                  "Measure read throughput in this folder (where the data sets live)");
  cmd->add_option("--storage-size", o->storage_size, "Size of the test file written and read there")
      ->default_str("256MiB");
  cmd->add_option("--storage-expect", o->storage_expect_mb_per_s,
                  "MB/s the data pipeline needs (below: a warning)")
      ->default_str("500")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--network", o->network, "Measure throughput to this iperf3 server (HOST or HOST:PORT)");
  cmd->add_option("--network-expect", o->network_expect_gbit_per_s,
                  "Gb/s the pipeline needs (below: a warning)")
      ->default_str("10")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--network-seconds", o->network_seconds, "How long the iperf3 test runs")
      ->default_str("3")
      ->check(CLI::Range(1, 60));
  AddStoreAccessOptions(cmd, &o->store, false);
  AddGlobalOptions(cmd, global);
  return cmd;
}

namespace {

// How many readings the doctor takes over its window.
constexpr int kDoctorReadings = 5;

// The GPUs over `window`: the first reading, then five more, whose
// throttling is summed per GPU into `sampled`; the last is the node view judged.
void SampleGpus(const GlobalOptions& global, const doctor::HostFiles& host, Clock* clock, Logger* logger,
                double window, doctor::InputSources* in_, std::map<int, doctor::ThrottleWindow>* sampled_) {
  doctor::InputSources& in = *in_;
  std::map<int, doctor::ThrottleWindow>& sampled = *sampled_;
  Result<std::unique_ptr<NodeSource>> source = NodeSource::Open(global, clock, logger);
  auto start = clock->SteadyNow();
  if (source.ok()) {
    in.through_agent = source.value()->is_agent();
    Result<node::NodeView> first = source.value()->Read(std::nullopt);
    if (first.ok()) {
      in.node_view = std::move(first).value();
      in.process_stats_before = doctor::ReadProcessStats(host, in.node_view);  // Their CPU time from here.
    } else {
      in.gpu_error = first.status().message();
    }
  } else {
    in.gpu_error = source.status().message();
  }
  for (int i = 1; i <= kDoctorReadings; ++i) {
    clock->SleepUntil(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(window * i / kDoctorReadings)),
                      std::stop_token());
    if (!source.ok() || !in.gpu_error.empty()) continue;
    Result<node::NodeView> read = source.value()->Read(std::nullopt);
    if (!read.ok()) continue;
    AddReading(read.value(), window / kDoctorReadings, &sampled);
    if (i == kDoctorReadings) in.node_view = std::move(read).value();
  }
}

// The throughput tests asked for with --storage and --network (not with
// --quick), said on a terminal while they run.
void MeasureThroughput(const DoctorOptions& o, int64_t storage_bytes, const doctor::Selection& selection,
                       doctor::DoctorInputs* in_) {
  doctor::DoctorInputs& in = *in_;
  auto measures = [&](const char* check) {
    const doctor::CheckInfo* c = doctor::FindCheck(check);
    return c != nullptr && doctor::IsSelected(*c, selection);
  };
  bool is_tty = ::isatty(STDERR_FILENO);
  if (!o.storage.empty() && measures("storage")) {
    if (o.quick) {
      in.storage_error = "--quick: no throughput test";
    } else {
      if (is_tty)
        std::fprintf(stderr, "tarmac doctor: measuring reads in %s (%s)...\n", o.storage.c_str(),
                     o.storage_size.c_str());
      Result<doctor::StorageResult> measured =
          doctor::MeasureStorage(o.storage, storage_bytes, std::chrono::milliseconds(1000));
      if (measured.ok())
        in.storage = measured.value();
      else
        in.storage_error = measured.status().message();
    }
  }
  if (!o.network.empty() && measures("network")) {
    if (o.quick) {
      in.network_error = "--quick: no throughput test";
    } else {
      if (is_tty)
        std::fprintf(stderr, "tarmac doctor: measuring the network to %s (%d s)...\n", o.network.c_str(),
                     o.network_seconds);
      Result<doctor::NetworkResult> measured = doctor::MeasureNetwork(o.network, o.network_seconds);
      if (measured.ok()) {
        in.network = measured.value();
      } else {
        in.network_error = measured.status().message();
        in.is_network_unreachable = measured.status().code() == StatusCode::kUnavailable;
      }
    }
  }
}

}  // namespace

int RunDoctor(const GlobalOptions& global, const DoctorOptions& o, Clock* clock, Logger* logger) {
  doctor::Selection selection{Names(o.only), Names(o.skip)};
  Status valid = doctor::ValidateSelection(selection);
  if (!valid.ok()) return ExitWith(valid);
  if (!o.storage.empty()) {
    struct stat st {};
    if (::stat(o.storage.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return ExitWith(Status::InvalidArgument(fmt::format("--storage: {}: not a folder", o.storage)));
    }
  }
  Result<int64_t> size = ParseBytes(o.storage_size);
  if (!size.ok() || size.value() < (int64_t{1} << 20) || size.value() > (int64_t{64} << 30)) {
    return ExitWith(Status::InvalidArgument(
        fmt::format("--storage-size: '{}' is not a size from 1MiB to 64GiB", o.storage_size)));
  }
  auto wants = [&](doctor::Question q) { return doctor::IsQuestionSelected(q, selection); };
  doctor::HostFiles host(o.host_root);
  // The whole run's budget, whatever the host (throughput tests asked for
  // with --storage and --network take their own, stated, time).
  const auto budget = o.quick ? std::chrono::seconds(2) : std::chrono::seconds(10);
  host.SetDeadline(clock->SteadyNow() + budget, clock);
  // The GPUs, and the window: throttling and CPU time are judged over it.
  double window = o.window_seconds > 0 ? o.window_seconds : o.quick ? 0.5 : 2.0;
  doctor::InputSources sources;
  sources.stat_before = host.Read("/proc/stat");
  std::map<int, doctor::ThrottleWindow> sampled;
  SampleGpus(global, host, clock, logger, window, &sources, &sampled);
  sources.stat_after = host.Read("/proc/stat");
  sources.process_stats_after = doctor::ReadProcessStats(host, sources.node_view);
  StoreAccessOptions store = o.store;
  store.socket = global.socket;  // The doctor's own --socket.
  Result<StoreAccess> history = OpenStore(store);
  if (history.ok()) sources.history = history.value().db.get();
  sources.now_unix = UnixSeconds(clock->WallNow());
  sources.gather = {wants(doctor::Question::kGpus), wants(doctor::Question::kScheduler)};
  doctor::DoctorInputs in;
  doctor::FillInputs(host, std::move(sources), &in);
  if (in.through_agent) {  // Its readings over minutes: bursts of work (doctor::CheckStarved).
    client::CallOptions once;
    once.patience = std::chrono::milliseconds(0);
    Result<nlohmann::json> status =
        client::AgentClient(global.socket)
            .Call("status", {{"series_seconds", ipc::kMaxRecentWindowSeconds}}, once);
    if (status.ok()) in.utilization_series = node::UtilizationSeriesFromStatus(status.value());
  }
  for (auto& [index, w] : sampled) {
    if (in.throttle.count(index)) continue;  // History knows better than a few readings.
    w.source = fmt::format("{} readings over {:.1f} s", kDoctorReadings, window);
    in.throttle[index] = w;
  }
  in.storage_expect_mb_per_s = o.storage_expect_mb_per_s;
  in.network_expect_gbit_per_s = o.network_expect_gbit_per_s;
  MeasureThroughput(o, size.value(), selection, &in);

  doctor::DoctorResult result = doctor::RunPlaybook(in, selection);
  if (host.timed_out()) {
    result.skipped.push_back(
        {"host", fmt::format("ran out of time ({} s budget): some of the host's files were not read, "
                             "so checks that need them may have passed without them",
                             budget.count())});
  }
  bool use_color = o.color == "always" || (o.color == "auto" && ::isatty(STDOUT_FILENO));
  std::string text = o.json ? doctor::RenderJson(result) : doctor::RenderText(result, use_color);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return doctor::ExitCodeOf(result.worst);
}

}  // namespace tarmac::cli
