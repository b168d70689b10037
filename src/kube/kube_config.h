// SPDX-License-Identifier: Apache-2.0
//
// [kubernetes] in the agent's config: tarmac as the node's GPU device
// plugin and the reader of the kubelet's pod resources (docs/kubernetes.md,
// docs/config.md).
#pragma once

#include <chrono>
#include <string>

#include "common/config_section.h"

namespace tarmac::kube {

struct KubeOptions {
  bool is_enabled = false;                                            // enabled
  std::string resource_name = "nvidia.com/gpu";                       // resource_name: vendor-domain/resource
  std::string device_plugin_dir = "/var/lib/kubelet/device-plugins";  // device_plugin_dir
  std::string endpoint = "tarmac-gpu.sock";                           // endpoint: socket file name in it
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";  // pod_resources_socket
  std::chrono::milliseconds pod_resources_interval{10000};  // pod_resources_interval: 1 s to 10 min
  std::chrono::milliseconds kubelet_timeout{2000};          // kubelet_timeout: 100 ms to 30 s, per call
  bool is_cdi = false;  // cdi: answer Allocate with CDI device names instead of NVIDIA_VISIBLE_DEVICES
  std::string cdi_kind = "nvidia.com/gpu";  // cdi_kind: the CDI vendor/class of the names
  // mig_strategy: how MIG instances are offered (plugin_devices.h): "none",
  // "single" or "mixed", as NVIDIA's device plugin names them.
  std::string mig_strategy = "none";
  bool operator==(const KubeOptions&) const = default;
};

void ReadKubernetesSection(ConfigSection& section, KubeOptions* out);

}  // namespace tarmac::kube
