// SPDX-License-Identifier: Apache-2.0
//
// How the history writer keeps its database; the defaults are the agent's
// ([store] in docs/config.md, read by store_config.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "store/retention.h"

namespace tarmac::store {

struct StoreOptions {
  std::string path;  // The database file.
  Retention retention;
  // The agent's fast interval ([sampler]): a sample stands for at most
  // twice this.
  std::chrono::milliseconds fast_interval{1000};
  size_t queue_capacity = 256;
  // PRAGMA quick_check while running, this often (0: at start only).
  std::chrono::seconds integrity_check_interval{3600};

  bool operator==(const StoreOptions&) const = default;
};

}  // namespace tarmac::store
