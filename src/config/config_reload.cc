// SPDX-License-Identifier: Apache-2.0
#include "config/config_reload.h"

#include <fmt/format.h>

namespace tarmac::config {
namespace {

std::string Sections(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "[" : ", [") + n + "]";
  return out;
}

}  // namespace

ReloadPlan PlanReload(const Config& running, const Config& next) {
  ReloadPlan plan;
  plan.result = running;
  // [agent]: the log level is live; the socket and state folder are not.
  if (next.agent.log_level != running.agent.log_level) {
    plan.applied.push_back("agent.log_level");
    plan.result.agent.log_level = next.agent.log_level;
  }
  AgentSection agent = next.agent;
  agent.log_level = running.agent.log_level;
  if (!(agent == running.agent)) plan.restart.push_back("agent");
  if (!(next.gpu == running.gpu)) plan.restart.push_back("gpu");
  // [sampler]: the GPU readers are made with their call timeout.
  sampler::SamplerOptions sampler = next.sampler;
  if (sampler.call_timeout != running.sampler.call_timeout) {
    plan.restart.push_back("sampler.call_timeout");
    sampler.call_timeout = running.sampler.call_timeout;
  }
  if (!(sampler == running.sampler)) {
    plan.applied.push_back("sampler");
    plan.result.sampler = sampler;
  }
  if (!(next.store == running.store)) plan.restart.push_back("store");
  if (!(next.report == running.report)) plan.restart.push_back("report");
  if (!(next.http == running.http) || !(next.metrics == running.metrics)) plan.restart.push_back("http");
  // [leases], [zombies] and [backfill] are one policy, read at every tick;
  // the admin group is also the backfill runners' and needs a restart.
  leases::LeasePolicy policy = next.leases;
  if (policy.admin_group != running.leases.admin_group) {
    plan.restart.push_back("leases.admin_group");
    policy.admin_group = running.leases.admin_group;
  }
  leases::LeasePolicy rest = policy;
  rest.zombies = running.leases.zombies;
  rest.terminates_zombies = running.leases.terminates_zombies;
  rest.backfill = running.leases.backfill;
  rest.slurm = running.leases.slurm;
  if (!(rest == running.leases)) plan.applied.push_back("leases");
  if (!(next.leases.zombies == running.leases.zombies) ||
      next.leases.terminates_zombies != running.leases.terminates_zombies) {
    plan.applied.push_back("zombies");
  }
  if (!(next.leases.backfill == running.leases.backfill)) plan.applied.push_back("backfill");
  if (!(next.leases.slurm == running.leases.slurm)) plan.applied.push_back("slurm");
  plan.result.leases = policy;
  if (!(next.api == running.api)) plan.restart.push_back("api");
  if (!(next.doctor == running.doctor)) plan.restart.push_back("doctor");
  if (!(next.kubernetes == running.kubernetes)) plan.restart.push_back("kubernetes");
  return plan;
}

std::string DescribeReload(const ReloadPlan& plan) {
  if (plan.applied.empty() && plan.restart.empty()) return "nothing changed";
  std::string out;
  if (!plan.applied.empty()) out = "applied " + Sections(plan.applied);
  if (!plan.restart.empty()) {
    out += fmt::format("{}{} take{} effect on restart", out.empty() ? "" : "; ", Sections(plan.restart),
                       plan.restart.size() == 1 ? "s" : "");
  }
  return out;
}

}  // namespace tarmac::config
