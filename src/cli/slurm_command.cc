// SPDX-License-Identifier: Apache-2.0
#include "cli/slurm_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli/node_source.h"
#include "client/agent_client.h"
#include "common/environment.h"
#include "common/exit_codes.h"
#include "common/host_name.h"
#include "common/proc_files.h"
#include "common/terminal_text.h"
#include "slurm/gres_conf.h"
#include "slurm/job_answer_json.h"
#include "slurm/job_request.h"

namespace tarmac::cli {
namespace {

std::string Get(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// How long a prolog waits for backfill on its GPUs to give way, at most
// (the agent's own bound is its grace and hand-over, well under this).
constexpr std::chrono::seconds kMostBackfillWait{120};

int RunJobScript(const std::string& name, const GlobalOptions& global, const SlurmOptions& options,
                 Clock* clock) {
  std::map<std::string, std::string> env = CurrentEnvironment();
  std::string job = Get(env, "SLURM_JOB_ID");
  // `goes_on` is what happens to the job when the script does not refuse.
  auto fail = [&](const std::string& why, const char* goes_on = "the job goes on without tarmac") {
    std::fprintf(stderr, "tarmac slurm %s: job %s: %s; %s\n", name.c_str(), job.empty() ? "?" : job.c_str(),
                 ForTerminal(why).c_str(), options.strict ? "refusing (--strict)" : goes_on);
    return options.strict ? kExitError : kExitOk;
  };
  if (job.empty()) return fail("SLURM_JOB_ID is not set (run by Slurm's Prolog= or Epilog=)");
  if (!slurm::IsJobId(job)) return fail("SLURM_JOB_ID is not a Slurm job id");
  nlohmann::json params = {{"job", job}};
  if (name == "prolog") {
    // The job's cgroup, where it can be read (v1), when the environment
    // names no GPU.
    std::optional<std::string> devices_list;
    const std::string uid = Get(env, "SLURM_JOB_UID");
    Result<std::vector<int>> gpus = slurm::JobGpus(env);
    if (gpus.ok() && gpus.value().empty() && !uid.empty() &&
        uid.find_first_not_of("0123456789") == std::string::npos) {
      std::string rules;
      std::string path =
          fmt::format("{}/devices/slurm/uid_{}/job_{}/devices.list", options.cgroup_root, uid, job);
      if (ReadSmallFile(path, &rules)) devices_list = rules;
    }
    Result<slurm::PrologRequest> request = slurm::PrologRequestFromEnvironment(env, devices_list);
    if (!request.ok()) return fail(request.status().message());
    params = slurm::PrologRequestToJson(request.value());
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
  auto waiting = [&r]() -> std::optional<slurm::PrologAnswer> {
    if (!r.ok()) return std::nullopt;
    Result<slurm::PrologAnswer> a = slurm::PrologAnswerFromJson(r.value());
    if (!a.ok() || !a.value().is_waiting) return std::nullopt;
    return a.value();
  };
  for (auto w = waiting(); w && clock->SteadyNow() - started < kMostBackfillWait; w = waiting()) {
    if (!is_told) {
      std::fprintf(stderr, "tarmac slurm prolog: job %s: %s\n", job.c_str(),
                   w->detail.empty() ? "waiting for backfill to give way" : ForTerminal(w->detail).c_str());
      is_told = true;
    }
    clock->SleepUntil(clock->SteadyNow() + std::chrono::milliseconds(w->retry_after_ms), std::stop_token());
    r = agent.Call("slurm." + name, params, call);
  }
  if (!r.ok() && r.status().code() == StatusCode::kDeadlineExceeded) {
    // The agent may still act on the call it took.
    return fail(
        r.status().message(),
        "the job goes on; the agent may still record its lease when it catches up (its epilog ends it)");
  }
  if (!r.ok()) return fail(r.status().message());
  if (std::optional<slurm::PrologAnswer> w = waiting()) {
    return fail(
        fmt::format("backfill still holds its GPUs after {} s: {}", kMostBackfillWait.count(), w->detail));
  }
  if (options.json) {
    std::printf("%s\n", r.value().dump(2).c_str());
  } else if (name == "epilog") {
    Result<slurm::EpilogAnswer> a = slurm::EpilogAnswerFromJson(r.value());
    if (!a.ok()) return fail("agent: " + a.status().message());
    std::printf("%s\n", slurm::EpilogSummary(a.value()).c_str());
  } else {
    Result<slurm::PrologAnswer> a = slurm::PrologAnswerFromJson(r.value());
    if (!a.ok()) return fail("agent: " + a.status().message());
    if (a.value().lease_id) {
      std::printf("tarmac: job %s holds GPU%s %s (lease %lld)\n", job.c_str(),
                  a.value().gpus.size() == 1 ? "" : "s",
                  fmt::format("{}", fmt::join(a.value().gpus, ",")).c_str(),
                  static_cast<long long>(*a.value().lease_id));
    }
  }
  return kExitOk;
}

}  // namespace

std::map<std::string, CLI::App*> AddSlurmCommand(CLI::App* app, SlurmOptions* options,
                                                 GlobalOptions* global) {
  CLI::App* slurm = app->add_subcommand(
      "slurm", "tarmac under Slurm: gres.conf from the hardware, the job prolog and epilog");
  slurm->require_subcommand(1);
  std::map<std::string, CLI::App*> cmds;
  CLI::App* gres = slurm->add_subcommand(
      "gres-conf", "Print this node's gres.conf (Type, File, Cores, Links per GPU) and its slurm.conf Gres=");
  gres->add_option("--node", options->node,
                   "The node's name in slurm.conf (default: this host's short name)");
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
                  : "For Slurm's Epilog=: end the job's lease, terminate what it left on its GPUs, say how "
                    "it used them");
    cmd->add_flag("--json", options->json, "The agent's answer as JSON");
    cmd->add_flag("--strict", options->strict,
                  "Exit 1 when the agent cannot record it (default: say why, exit 0)");
    if (std::string(name) == "prolog") {
      cmd->add_option(
          "--cgroup-root", options->cgroup_root,
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
  Result<std::unique_ptr<NodeSource>> source = NodeSource::Open(global, clock, logger);
  if (!source.ok()) return ExitWith(source.status().WithContext("slurm gres-conf"));
  Result<node::NodeView> node_view = source.value()->Read(std::nullopt);
  if (!node_view.ok()) return ExitWith(node_view.status().WithContext("slurm gres-conf"));
  std::string node = options.node;
  if (node.empty()) {
    node = HostName();
    if (size_t dot = node.find('.'); dot != std::string::npos) node.resize(dot);
  }
  std::string minors;
  std::optional<std::string> mig_minors;
  if (ReadOperatorFile(options.mig_minors, &minors, size_t{1} << 20)) mig_minors = minors;
  std::fputs(slurm::RenderGresConf(node_view.value(), node, options.dev_dir, mig_minors).c_str(), stdout);
  return node_view.value().gpus.empty() ? kExitError : kExitOk;
}

}  // namespace tarmac::cli
