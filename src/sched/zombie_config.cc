// SPDX-License-Identifier: Apache-2.0
#include "sched/zombie_config.h"

namespace tarmac::sched {

void ReadZombieKeys(ConfigSection& section, ZombiePolicy* out) {
  section.Bytes("min_memory", &out->min_memory_bytes);
  section.Interval("idle_for", std::chrono::milliseconds(1000),
                   std::chrono::milliseconds(7LL * 24 * 3600 * 1000), &out->idle_for);
  section.Strings("allowlist", &out->allowlist);
  section.Bool("include_system_users", &out->includes_system_users);
}

}  // namespace tarmac::sched
