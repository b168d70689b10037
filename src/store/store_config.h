// SPDX-License-Identifier: Apache-2.0
//
// [store] of the agent's config: whether history is kept, where, and how
// long each tier. Keys (defaults in StoreConfig and StoreOptions): enabled,
// path (empty: <state_dir>/tarmac.db), raw_retention, minute_retention and
// hour_retention (1d to 10y, 10y, 30y; raw <= minute <= hour),
// integrity_check_interval (0 to 30d; 0: only at start).
#pragma once

#include "common/config_section.h"
#include "store/store_options.h"

namespace tarmac::store {

struct StoreConfig {
  bool is_enabled = true;
  StoreOptions options;  // options.path empty: in the agent's state directory.

  bool operator==(const StoreConfig&) const = default;
};

void ReadStoreSection(ConfigSection& section, StoreConfig* out);

}  // namespace tarmac::store
