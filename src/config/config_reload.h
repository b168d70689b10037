// SPDX-License-Identifier: Apache-2.0
//
// What a reload (SIGHUP) of the agent's config changes: each section that
// differs between the running config and the file, split into those the
// agent applies at once and those that need a restart. The agent applies
// the first and keeps the running values of the second, and says both in
// its log and its event. Pure.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace tarmac::config {

struct ReloadPlan {
  // Section names as the file spells them ("sampler", "zombies"), in the
  // order of docs/config.md.
  // Live: agent.log_level, [sampler] (but its call_timeout), [zombies],
  // [leases] (but its admin_group), [backfill], [slurm].
  std::vector<std::string> applied;
  std::vector<std::string> restart;  // Everything else that changed.
  // The config to run with: `running` with the live sections of `next`.
  Config result;
};

ReloadPlan PlanReload(const Config& running, const Config& next);

// "applied [sampler], [zombies]; [http] takes effect on restart", or
// "nothing changed".
std::string DescribeReload(const ReloadPlan& plan);

}  // namespace tarmac::config
