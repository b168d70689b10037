// SPDX-License-Identifier: Apache-2.0
//
// tarmac as the node's GPU device plugin: the kubelet's v1beta1 API over
// gRPC on a Unix socket in the device-plugins folder (proto/deviceplugin.proto,
// docs/kubernetes.md).
//
//  - Start serves DevicePlugin on <device_plugin_dir>/<endpoint>, then calls
//    Register on the kubelet's kubelet.sock. While registered it watches
//    both sockets: when its own socket file is gone (the kubelet wipes the
//    folder when it restarts) or kubelet.sock is a new file, it serves and
//    registers anew. A refused registration (another plugin has the
//    resource, an unsupported version) or a kubelet not there is logged,
//    recorded once as an event, and retried with backoff up to 30 s; the
//    agent goes on serving meanwhile.
//  - ListAndWatch sends the device list at once and again within moments of
//    every change SetDevices makes (health, NUMA node).
//  - Allocate: every ID must be a device of this node and healthy now
//    (INVALID_ARGUMENT / FAILED_PRECONDITION, naming the ID, otherwise);
//    then each container's GPUs become a pod lease through `hold` (its
//    refusal is the kubelet's answer), and the container gets
//    NVIDIA_VISIBLE_DEVICES=<UUIDs> (or, with cdi, CDI device names).
//  - GetPreferredAllocation answers from tarmac's placement (plugin_devices.h).
//
// Thread safety: SetDevices, Problem and the stats from any thread;
// Start/Stop from one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/status.h"
#include "kube/kube_config.h"
#include "kube/plugin_devices.h"
#include "node/snapshot.h"

namespace tarmac::kube {

struct DevicePluginHooks {
  // Records one container's GPUs as allocated (a pod lease); an error is
  // what the kubelet is answered.
  std::function<Status(const std::vector<std::string>& uuids)> hold;
  // The GPUs as last read (for preferred allocations).
  std::function<std::shared_ptr<const node::Snapshot>()> latest;
  // Records an event (kind, detail): registrations and their failures.
  std::function<void(const std::string& kind, const std::string& detail)> record_event;
};

class DevicePlugin {
 public:
  DevicePlugin(KubeOptions options, DevicePluginHooks hooks, Logger* logger);
  ~DevicePlugin();
  DevicePlugin(const DevicePlugin&) = delete;
  DevicePlugin& operator=(const DevicePlugin&) = delete;

  // Serves and registers on a thread of its own (see above).
  void Start();
  void Stop();

  // The devices as they are now; streamed to the kubelet when they differ
  // from the last list sent.
  void SetDevices(std::vector<PluginDevice> devices) EXCLUDES(mu_);

  // "" while registered; otherwise why not (for /health and the log).
  std::string Problem() const EXCLUDES(mu_);
  // Successful registrations since Start (a kubelet restart adds one).
  int64_t registrations() const EXCLUDES(mu_);
  // The device list's version: 1 for the first SetDevices, +1 per change.
  uint64_t devices_version() const EXCLUDES(mu_);

  // How long the plugin waits before registering again after a failure,
  // at most; and how often it looks at the sockets while registered.
  static constexpr std::chrono::seconds kMaxBackoff{30};
  static constexpr std::chrono::milliseconds kWatchInterval{200};

  class Service;  // The gRPC service (device_plugin.cc).

 private:
  void Loop(std::stop_token stop);
  // Serves, registers, and watches until a socket changes or a stop.
  // Returns why it ended (a problem to retry after), or OK on a stop.
  Status Session(std::stop_token stop);

  KubeOptions options_;
  DevicePluginHooks hooks_;
  Logger* logger_;
  std::unique_ptr<Service> service_;
  std::jthread thread_;
  mutable Mutex mu_;
  std::condition_variable_any changed_;  // Devices changed, or stopping.
  std::vector<PluginDevice> devices_ GUARDED_BY(mu_);
  uint64_t version_ GUARDED_BY(mu_) = 0;
  bool is_stopping_ GUARDED_BY(mu_) = false;
  std::string problem_ GUARDED_BY(mu_) = "not registered yet";
  int64_t registrations_ GUARDED_BY(mu_) = 0;

  friend class Service;
};

}  // namespace tarmac::kube
