// SPDX-License-Identifier: Apache-2.0
//
// The agent's configuration: TOML, /etc/tarmac/tarmac.toml by default, every
// key optional (docs/config.md lists each with its default). Loading checks
// every key and reports every problem at once, one per line, each naming the
// file, the line and the key; nothing is applied from a bad file.
// Pure functions besides reading the file; thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "doctor/doctor_config.h"
#include "fleet/fleet_config.h"
#include "gpu/backend_factory.h"
#include "http/http_config.h"
#include "http/server.h"
#include "ipc/unix_server.h"
#include "kube/kube_config.h"
#include "leases/lease_policy.h"
#include "metrics/render.h"
#include "report/pricing.h"
#include "sampler/sampler_options.h"
#include "store/store_config.h"

namespace tarmac::config {

inline constexpr const char* kDefaultConfigPath = "/etc/tarmac/tarmac.toml";
inline constexpr const char* kDefaultSocketPath = "/run/tarmac/tarmac.sock";
// A config file over this is refused (a config is a few KiB).
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// [agent]: the agent's own keys.
struct AgentSection {
  std::string socket_path = kDefaultSocketPath;  // Unix socket of the local API (1 to 100 bytes).
  std::string state_dir = "/var/lib/tarmac";     // Database and state.
  std::string log_level = "info";                // debug, info, warning, error.

  bool operator==(const AgentSection&) const = default;
};

// Each section is read and checked by the module that owns it, into that
// module's own options, whose defaults are the config's.
struct Config {
  AgentSection agent;               // [agent]
  gpu::BackendOptions gpu;          // [gpu]      gpu/backend_config.h
  sampler::SamplerOptions sampler;  // [sampler]  sampler/sampler_config.h
  store::StoreConfig store;         // [store]    store/store_config.h
  report::Pricing report;           // [report]   report/pricing.h
  http::HttpOptions http;           // [http]     http/http_config.h (listen)
  http::WebOptions web;             // [web]      http/http_config.h
  metrics::RenderOptions metrics;   // [http]     metrics/metrics_config.h (the page)
  leases::LeasePolicy
      leases;              // [leases], [zombies], [backfill]  leases/lease_config.h, sched/zombie_config.h
  ipc::ServerOptions api;  // [api]      ipc/server_config.h
  doctor::WatchOptions doctor;   // [doctor]   doctor/doctor_config.h
  kube::KubeOptions kubernetes;  // [kubernetes] kube/kube_config.h
  fleet::FleetConfig fleet;      // [fleet]    fleet/fleet_config.h (tarmac fleet's; the console's fleet page)

  bool operator==(const Config&) const = default;
};

// Parses config text. kInvalidArgument listing every problem, one per line,
// as "SOURCE:LINE: key 'section.key': what is wrong".
Result<Config> ParseConfig(std::string_view text, std::string_view source_name);

// Every key the sections' readers know, as "section.key", in the order
// read (docs/config.md lists the same keys; a test checks).
std::vector<std::string> ConfigKeys();

// The history database: store_path, or <state_dir>/tarmac.db.
std::string StorePath(const Config& config);

// Reads and parses `path`. A missing file at the default path is not an
// error (defaults apply) unless `must_exist`; an unreadable one always is.
Result<Config> LoadConfig(const std::string& path, bool must_exist);

}  // namespace tarmac::config
