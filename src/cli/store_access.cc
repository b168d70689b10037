// SPDX-License-Identifier: Apache-2.0
#include "cli/store_access.h"

#include "common/time_spec.h"
#include "store/schema.h"

namespace tarmac::cli {

void AddStoreAccessOptions(CLI::App* cmd, StoreAccessOptions* options) {
  cmd->add_option("--db", options->db, "History database (default: the agent's, <state_dir>/tarmac.db)");
  cmd->add_option("--config", options->config_path, "Config file (default /etc/tarmac/tarmac.toml)");
}

Result<StoreAccess> OpenStore(const StoreAccessOptions& options) {
  StoreAccess access;
  std::string config_path = options.config_path.empty() ? config::kDefaultConfigPath : options.config_path;
  Result<config::Config> c = config::LoadConfig(config_path, !options.config_path.empty());
  if (!c.ok()) return c.status();
  access.config = c.value();
  access.path = options.db.empty() ? config::StorePath(access.config) : options.db;
  Result<std::unique_ptr<store::Db>> db = store::OpenForReading(access.path);
  if (!db.ok()) return db.status();
  access.db = std::move(db).value();
  return access;
}

Result<TimeRange> ParseRange(const std::string& since, const std::string& until, Clock* clock) {
  int64_t now = UnixSeconds(clock->WallNow());
  Result<int64_t> from = ParseTimeSpec(since, now);
  if (!from.ok()) return from.status().WithContext("--since");
  Result<int64_t> to = ParseTimeSpec(until, now);
  if (!to.ok()) return to.status().WithContext("--until");
  if (to.value() <= from.value()) {
    return Status::InvalidArgument("--since must be before --until", since + " .. " + until);
  }
  return TimeRange{from.value(), to.value() + 1};  // --until is inclusive.
}

}  // namespace tarmac::cli
