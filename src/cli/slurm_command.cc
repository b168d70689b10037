// SPDX-License-Identifier: Apache-2.0
#include "cli/slurm_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli/fleet_source.h"
#include "cli/gres_conf.h"
#include "client/agent_client.h"
#include "common/exit_codes.h"
#include "common/host_name.h"
#include "common/proc_files.h"
#include "common/split.h"

extern char** environ;

namespace tarmac::cli {
namespace {

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string Get(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace

// "tarmac: job 42: 2 GPUs for 1.30 h, mean 4 %, 1.90 GPU-hours idle, peak 12.0 GiB; ..."
std::string EpilogSummary(const nlohmann::json& a) {
  size_t gpus = a.value("gpus", nlohmann::json::array()).size();
  double held_h = a.value("held_seconds", 0.0) / 3600;
  double idle_h = a.value("idle_gpu_seconds", 0.0) / 3600;
  size_t left = a.value("terminated", nlohmann::json::array()).size();
  std::string mean = a.contains("mean_utilization_ratio") && a["mean_utilization_ratio"].is_number()
                         ? fmt::format("mean {:.0f} %", a["mean_utilization_ratio"].get<double>() * 100)
                         : std::string("mean unknown");
  std::string out =
      fmt::format("tarmac: job {}: {} GPU{} for {:.2f} h, {}, {:.2f} GPU-hours idle, peak {:.1f} GiB",
                  a.value("job", std::string("?")), gpus, gpus == 1 ? "" : "s", held_h, mean, idle_h,
                  static_cast<double>(a.value("memory_max_bytes", int64_t{0})) / (1 << 30));
  if (left > 0) out += fmt::format("; {} process{} left on its GPUs terminated", left, left == 1 ? "" : "es");
  return out;
}

namespace {

// How long a prolog waits for backfill on its GPUs to give way, at most
// (the agent's own bound is its grace and hand-over, well under this).
constexpr std::chrono::seconds kMostBackfillWait{120};

int RunJobScript(const std::string& name, const GlobalOptions& global, const SlurmOptions& options, Clock* clock) {
  std::map<std::string, std::string> env = Environment();
  std::string job = Get(env, "SLURM_JOB_ID");
  // `goes_on` is what happens to the job when the script does not refuse.
  auto fail = [&](const std::string& why, const char* goes_on = "the job goes on without tarmac") {
    std::fprintf(stderr, "tarmac slurm %s: job %s: %s; %s\n", name.c_str(), job.empty() ? "?" : job.c_str(),
                 why.c_str(), options.strict ? "refusing (--strict)" : goes_on);
    return options.strict ? kExitError : kExitOk;
  };
  if (job.empty()) return fail("SLURM_JOB_ID is not set (run by Slurm's Prolog= or Epilog=)");
  nlohmann::json params = {{"job", job}};
  if (name == "prolog") {
    Result<std::vector<int>> gpus = JobGpus(env);
    if (!gpus.ok()) return fail(gpus.status().message());
    if (gpus.value().empty()) {  // Nothing in the environment: the job's cgroup, where it can be read (v1).
      std::string rules;
      std::string path = fmt::format("{}/devices/slurm/uid_{}/job_{}/devices.list", options.cgroup_root,
                                     Get(env, "SLURM_JOB_UID"), job);
      if (ReadSmallFile(path, &rules)) gpus = GpusOfDevicesList(rules);
    }
    const std::string uid = Get(env, "SLURM_JOB_UID");
    char* end = nullptr;
    long long uid_value = uid.empty() ? -1 : std::strtoll(uid.c_str(), &end, 10);
    if (uid.empty() || *end != '\0' || uid_value < 0) return fail("SLURM_JOB_UID is not a uid");
    if (Get(env, "SLURM_JOB_USER").empty()) return fail("SLURM_JOB_USER is not set");
    params["uid"] = uid_value;
    params["user"] = Get(env, "SLURM_JOB_USER");
    params["gpus"] = gpus.value();
    if (std::string partition = Get(env, "SLURM_JOB_PARTITION"); !partition.empty()) params["partition"] = partition;
  }
  // A prolog waits for nobody: an agent that does not answer within a few
  // seconds is a miss, logged.
  client::CallOptions call;
  call.patience = std::chrono::milliseconds(2000);
  call.timeout = std::chrono::milliseconds(5000);
  client::AgentClient agent(global.socket);
  Result<nlohmann::json> r = agent.Call("slurm." + name, params, call);
  // A backfill lease on the job's GPUs gives way first (its grace, then
  // an empty GPU): the agent says so, and the prolog asks again.
  auto started = clock->SteadyNow();
  bool is_told = false;
  while (r.ok() && r.value().value("waiting", false) && clock->SteadyNow() - started < kMostBackfillWait) {
    if (!is_told) {
      std::fprintf(stderr, "tarmac slurm prolog: job %s: %s\n", job.c_str(),
                   r.value().value("detail", std::string("waiting for backfill to give way")).c_str());
      is_told = true;
    }
    clock->SleepUntil(clock->SteadyNow() + std::chrono::milliseconds(r.value().value("retry_after_ms", int64_t{200})),
                      std::stop_token());
    r = agent.Call("slurm." + name, params, call);
  }
  if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded) {
    // The agent may still act on the call it took.
    return fail(r.status().message(),
                "the job goes on; the agent may still record its lease when it catches up (its epilog ends it)");
  }
  if (!r.ok()) return fail(r.status().message());
  if (r.value().value("waiting", false)) {
    return fail(fmt::format("backfill still holds its GPUs after {} s: {}", kMostBackfillWait.count(),
                            r.value().value("detail", std::string())));
  }
  if (options.json) {
    std::printf("%s\n", r.value().dump(2).c_str());
  } else if (name == "epilog") {
    std::printf("%s\n", EpilogSummary(r.value()).c_str());
  } else if (!r.value()["lease"].is_null()) {
    std::printf("tarmac: job %s holds GPU %s (lease %lld)\n", job.c_str(), r.value()["lease"]["gpus"].dump().c_str(),
                static_cast<long long>(r.value()["lease"].value("id", int64_t{0})));
  }
  return kExitOk;
}

}  // namespace

std::vector<int> GpusOfDevicesList(const std::string& devices_list) {
  std::vector<int> out;
  std::istringstream lines(devices_list);
  std::string line;
  while (std::getline(lines, line)) {
    // "c 195:3 rwm"
    if (line.rfind("c 195:", 0) != 0) continue;
    size_t end = line.find(' ', 6);
    std::string minor = line.substr(6, end == std::string::npos ? std::string::npos : end - 6);
    if (minor.empty() || minor.size() > 3 || minor.find_first_not_of("0123456789") != std::string::npos) continue;
    int n = std::stoi(minor);
    if (n < 255 && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<int>> JobGpus(const std::map<std::string, std::string>& env) {
  const char* name = "SLURM_JOB_GPUS";
  std::string value = Get(env, name);
  if (value.empty()) {
    name = "CUDA_VISIBLE_DEVICES";
    value = Get(env, name);
  }
  std::vector<int> out;
  if (value.empty() || value == "NoDevFiles") return out;
  for (const std::string& item : SplitCommas(value)) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}='{}': expected GPU indices such as 0,2", name, value));
    }
    out.push_back(std::stoi(item));
  }
  return out;
}

std::map<std::string, CLI::App*> AddSlurmCommand(CLI::App* app, SlurmOptions* options, GlobalOptions* global) {
  CLI::App* slurm = app->add_subcommand("slurm", "tarmac under Slurm: gres.conf from the hardware, the job prolog and epilog");
  slurm->require_subcommand(1);
  std::map<std::string, CLI::App*> cmds;
  CLI::App* gres = slurm->add_subcommand(
      "gres-conf", "Print this node's gres.conf (Type, File, Cores, Links per GPU) and its slurm.conf Gres=");
  gres->add_option("--node", options->node, "The node's name in slurm.conf (default: this host's short name)");
  gres->add_option("--dev-dir", options->dev_dir, "Where the nvidiaN device files are (default /dev)");
  gres->add_option("--mig-minors", options->mig_minors,
                   "The MIG capability minors (default /proc/driver/nvidia-caps/mig-minors): MIG instances' "
                   "MultipleFiles=");
  AddGlobalOptions(gres, global);
  cmds["gres-conf"] = gres;
  for (const char* name : {"prolog", "epilog"}) {
    CLI::App* cmd = slurm->add_subcommand(
        name, std::string(name) == "prolog"
                  ? "For Slurm's Prolog=: record the job's GPUs (SLURM_JOB_GPUS) as a lease of kind slurm"
                  : "For Slurm's Epilog=: end the job's lease, terminate what it left on its GPUs, say how it used them");
    cmd->add_flag("--json", options->json, "The agent's answer as JSON");
    cmd->add_flag("--strict", options->strict, "Exit 1 when the agent cannot record it (default: say why, exit 0)");
    if (std::string(name) == "prolog") {
      cmd->add_option("--cgroup-root", options->cgroup_root,
                      "Where the job's cgroup is read when SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES name no GPU "
                      "(cgroup v1 devices.list; default /sys/fs/cgroup)");
    }
    AddSocketOption(cmd, global);
    cmds[name] = cmd;
  }
  return cmds;
}

int RunSlurm(const std::string& name, const GlobalOptions& global, const SlurmOptions& options, Clock* clock,
             Logger* logger) {
  if (name != "gres-conf") return RunJobScript(name, global, options, clock);
  Result<std::unique_ptr<FleetSource>> source = FleetSource::Open(global, clock, logger);
  if (!source.ok()) return ExitWith(source.status().WithContext("slurm gres-conf"));
  Result<fleet::FleetView> fleet = source.value()->Read(std::nullopt);
  if (!fleet.ok()) return ExitWith(fleet.status().WithContext("slurm gres-conf"));
  std::string node = options.node;
  if (node.empty()) {
    node = HostName();
    if (size_t dot = node.find('.'); dot != std::string::npos) node.resize(dot);
  }
  std::string minors;
  std::optional<std::string> mig_minors;
  if (ReadOperatorFile(options.mig_minors, &minors, size_t{1} << 20)) mig_minors = minors;
  std::fputs(RenderGresConf(fleet.value(), node, options.dev_dir, mig_minors).c_str(), stdout);
  return fleet.value().gpus.empty() ? kExitError : kExitOk;
}

}  // namespace tarmac::cli
