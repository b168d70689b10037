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
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace tarmac::config {

inline constexpr const char* kDefaultConfigPath = "/etc/tarmac/tarmac.toml";
inline constexpr const char* kDefaultSocketPath = "/run/tarmac/tarmac.sock";
// A config file over this is refused (a config is a few KiB).
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

struct Config {
  // [agent]
  std::string socket_path = kDefaultSocketPath;  // Unix socket of the local API.
  std::string state_dir = "/var/lib/tarmac";      // Database and state.
  std::string log_level = "info";                 // debug, info, warning, error.
  // [gpu]
  std::string backend = "auto";  // auto, nvml or sim.
  std::string nvml_library;      // Empty: libnvidia-ml.so.1, then libnvidia-ml.so.
  std::string scenario;          // For backend = "sim".
  std::string sim_dir;           // For backend = "sim"; empty: the default.
  // [sampler]
  std::chrono::milliseconds fast_interval{1000};   // Utilization, memory, power, processes.
  std::chrono::milliseconds slow_interval{30000};  // ECC, PCIe, NVLink, fans.
  std::chrono::milliseconds call_timeout{2000};    // A GPU read longer than this: unresponsive.
  std::chrono::milliseconds reattach_interval{5000};  // Retry opening the driver this often.
  // [store]
  bool is_store_enabled = true;
  std::string store_path;  // Empty: <state_dir>/tarmac.db.
  std::chrono::milliseconds raw_retention{std::chrono::hours(24 * 7)};
  std::chrono::milliseconds minute_retention{std::chrono::hours(24 * 90)};
  std::chrono::milliseconds hour_retention{std::chrono::hours(24 * 365 * 3)};
  // How often the running agent checks its history database (PRAGMA
  // quick_check); 0: only at start.
  std::chrono::milliseconds integrity_check_interval{std::chrono::hours(1)};
  // [report]
  std::string currency = "USD";
  double gpu_hour_cost = 0;                              // Per GPU-hour; 0: costs not shown.
  std::map<std::string, double> gpu_hour_cost_by_model;  // By GPU name, as NVML reports it.
  // [http]
  std::string http_listen = "127.0.0.1:9477";  // HOST:PORT, or "off".
  std::string hostname;                        // Host label in metrics; empty: the host's name.
  bool is_dcgm_compatible = true;              // Also serve dcgm-exporter's families.
  std::string dcgm_hostname_label = "Hostname";  // "hostname" as dcgm-exporter >= 4.8.3 names it.
  int64_t max_process_series = 200;            // Per-process series cap.
  // [zombies]
  int64_t zombie_min_memory_bytes = int64_t{1} << 30;        // Held at least this much...
  std::chrono::milliseconds zombie_idle_for{std::chrono::minutes(30)};  // ...at 0 % SM this long.
  std::vector<std::string> zombie_allowlist = {"Xorg", "nvidia-persistenced", "ollama", "tritonserver",
                                               "dcgm-exporter"};  // Process names never reported.
  bool zombie_includes_system_users = false;                 // Users under uid 1000 (and root).
  std::string zombie_policy = "report";                       // "report" or "terminate".
  // [leases]
  std::string admin_group = "tarmac-admin";  // Members manage every lease and process (root always does).
  std::chrono::milliseconds kill_grace{10000};  // SIGTERM, then SIGKILL after this.
  std::chrono::milliseconds idle_timeout{0};    // Default idle timeout of a lease; 0: none.
  std::chrono::milliseconds idle_grace{std::chrono::minutes(5)};  // From the idle warning to the action.
  std::string idle_policy = "warn";             // "warn", "release" or "terminate".
  std::map<std::string, std::string> idle_policy_by_user;      // User name -> policy.
  std::map<std::string, std::string> idle_policy_by_priority;  // "low", "normal", "high" -> policy.
  std::string foreign_policy = "report";        // Processes on a GPU leased to another user.
  // [api]
  int max_connections = 4096;  // Concurrent clients (waiters included); more are refused.
  int64_t max_request_bytes = 65536;   // Longer requests are refused.
  std::chrono::milliseconds request_timeout{5000};  // A client silent this long is dropped.
};

// Parses config text. kInvalidArgument listing every problem, one per line,
// as "SOURCE:LINE: key 'section.key': what is wrong".
Result<Config> ParseConfig(std::string_view text, std::string_view source_name);

// The history database: store_path, or <state_dir>/tarmac.db.
std::string StorePath(const Config& config);

// Cost of one GPU-hour of `model` (the per-model price, else the default).
double GpuHourCost(const Config& config, const std::string& model);

// Reads and parses `path`. A missing file at the default path is not an
// error (defaults apply) unless `must_exist`; an unreadable one always is.
Result<Config> LoadConfig(const std::string& path, bool must_exist);

}  // namespace tarmac::config
