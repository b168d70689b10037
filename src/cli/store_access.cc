// SPDX-License-Identifier: Apache-2.0
#include "cli/store_access.h"

#include <fmt/format.h>

#include "common/json_fields.h"
#include "common/time_spec.h"
#include "ipc/unix_server.h"
#include "store/schema.h"

namespace tarmac::cli {

void AddStoreAccessOptions(CLI::App* cmd, StoreAccessOptions* options, bool adds_socket) {
  cmd->add_option("--db", options->db,
                  "History database (default: the running agent's, else the config's <state_dir>/tarmac.db)");
  cmd->add_option("--config", options->config_path, "Config file (default /etc/tarmac/tarmac.toml)");
  if (adds_socket) {
    cmd->add_option("--socket", options->socket, "The agent asked where its history is")
        ->envname("TARMAC_SOCKET")
        ->capture_default_str();
  }
}

namespace {

// Where the agent on `socket` keeps its history; empty when no agent
// answers or it keeps none.
std::string AgentStorePath(const std::string& socket) {
  ipc::Request hello;
  hello.method = "hello";
  Result<nlohmann::json> answer = ipc::CallAgent(socket, hello, std::chrono::milliseconds(2000));
  if (!answer.ok()) return "";
  std::string path;
  JsonFields(answer.value(), "hello", JsonFields::kSkipWrongTypes).Object("store").Optional("path", &path);
  return path;
}

}  // namespace

Result<StoreAccess> OpenStore(const StoreAccessOptions& options) {
  StoreAccess access;
  std::string config_path = options.config_path.empty() ? config::kDefaultConfigPath : options.config_path;
  Result<config::Config> c = config::LoadConfig(config_path, !options.config_path.empty());
  if (!c.ok()) return c.status();
  access.config = c.value();
  if (!options.db.empty()) {
    access.path = options.db;
    access.source = "--db";
  } else if (!options.config_path.empty()) {
    access.path = config::StorePath(access.config);
    access.source = "--config";
  } else if (std::string agent = AgentStorePath(options.socket); !agent.empty()) {
    access.path = agent;
    access.source = "the agent";
  } else {
    access.path = config::StorePath(access.config);
    access.source = "the default config";
  }
  Result<std::unique_ptr<store::Db>> db = store::OpenForReading(access.path);
  if (!db.ok()) {
    return db.status().WithContext(
        fmt::format("history database {} ({}{})", access.path, access.source,
                    access.source == "the default config"
                        ? fmt::format("; no agent answered on {}; --db names another", options.socket)
                        : ""));
  }
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
