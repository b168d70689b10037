// SPDX-License-Identifier: Apache-2.0
//
// What counts as a zombie: the detection keys of [zombies] in the agent's
// config (defaults in ZombiePolicy): min_memory (a size), idle_for (1s to
// 7d), allowlist (process names never reported) and include_system_users.
// What is done about one (the section's `policy`) is the lease service's
// (leases/lease_config.h).
#pragma once

#include "common/config_section.h"
#include "sched/zombies.h"

namespace tarmac::sched {

void ReadZombieKeys(ConfigSection& section, ZombiePolicy* out);

}  // namespace tarmac::sched
