// SPDX-License-Identifier: Apache-2.0
#include "agent/agent_setup.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "agent/agent.h"
#include "config/agent_flags.h"

namespace tarmac::agent {

Result<config::Config> LoadAgentConfig(const AgentFlags& flags) {
  std::string path = flags.config_path.empty() ? config::kDefaultConfigPath : flags.config_path;
  Result<config::Config> loaded = config::LoadConfig(path, !flags.config_path.empty());
  if (!loaded.ok()) return loaded.status();
  config::Config c = loaded.value();
  config::ApplyAgentFlags(flags, &c);
  // In a Kubernetes DaemonSet the node's name (the downward API) is the
  // host label, as dcgm-exporter does.
  if (const char* node = std::getenv("NODE_NAME");
      node != nullptr && *node != '\0' && c.metrics.hostname.empty()) {
    c.metrics.hostname = node;
  }
  // A private agent of a normal user keeps its state in the user's state
  // home, not in the system's (which it may not write).
  if (flags.state_dir.empty() && c.agent.state_dir == config::AgentSection().state_dir && ::geteuid() != 0) {
    const char* xdg = std::getenv("XDG_STATE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg != nullptr && *xdg == '/') {
      c.agent.state_dir = std::string(xdg) + "/tarmac";
    } else if (home != nullptr && *home == '/') {
      c.agent.state_dir = std::string(home) + "/.local/state/tarmac";
    }
  }
  return c;
}

namespace {

store::StoreOptions StoreOptionsOf(const config::Config& c) {
  store::StoreOptions o = c.store.options;
  o.path = config::StorePath(c);
  o.fast_interval = c.sampler.fast_interval;
  return o;
}

}  // namespace

std::unique_ptr<store::StoreWriter> OpenHistory(const config::Config& c, Clock* clock, Logger* logger) {
  if (!c.store.is_enabled) return nullptr;
  Result<std::unique_ptr<store::StoreWriter>> writer =
      store::StoreWriter::Open(StoreOptionsOf(c), clock, logger);
  if (!writer.ok()) {
    logger->Log(LogLevel::kError, "{}; history is off (live data is still served)",
                writer.status().message());
    return nullptr;
  }
  logger->Log(LogLevel::kInfo, "store: writing history to {}", config::StorePath(c));
  writer.value()->Start();
  return std::move(writer).value();
}

// Why a state file cannot be used, and what to do: a permission problem is
// one (run as a user who may, or another --state-dir); anything else can be
// moved aside to start without what it held.
Status StateError(const Status& s, const char* doing, const char* what) {
  if (s.code() == StatusCode::kPermissionDenied ||
      s.message().find("ermission denied") != std::string::npos ||
      s.message().find("readonly") != std::string::npos ||
      s.message().find("read-only") != std::string::npos) {
    return s.WithContext(
        fmt::format("agent: cannot {} (a permission problem: run the agent as a user who may "
                    "write its state directory, or give it --state-dir)",
                    doing));
  }
  return s.WithContext(
      fmt::format("agent: cannot {} (move the file aside to start without {})", doing, what));
}

// Each API client holds a descriptor while it waits (lease.wait): raise the
// soft open-file limit to fit max_connections, as far as the hard limit
// allows, and say so when it cannot.
void RaiseOpenFileLimit(int max_connections, Logger* logger) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t wanted = static_cast<rlim_t>(max_connections) + 256;  // Databases, HTTP, the NVML library.
  if (limit.rlim_cur >= wanted) return;
  rlim_t raised = std::min(wanted, limit.rlim_max);
  if (raised > limit.rlim_cur) {
    limit.rlim_cur = raised;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (raised < wanted) {
    logger->Log(LogLevel::kWarning,
                "agent: open files limited to {} (hard limit); [api] max_connections {} needs {}",
                static_cast<long long>(raised), max_connections, static_cast<long long>(wanted));
  }
}

}  // namespace tarmac::agent
