// SPDX-License-Identifier: Apache-2.0
#include "kube/kube_config.h"

#include <algorithm>
#include <cctype>

namespace tarmac::kube {
namespace {

// "vendor-domain/resource", as the kubelet accepts an extended resource.
bool IsResourceName(const std::string& name) {
  size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '/';
  });
}

}  // namespace

void ReadKubernetesSection(ConfigSection& section, KubeOptions* out) {
  section.Bool("enabled", &out->is_enabled);
  std::string resource = out->resource_name;
  section.String("resource_name", &resource);
  if (IsResourceName(resource)) {
    out->resource_name = resource;
  } else {
    section.Fail("resource_name", "expected vendor-domain/resource, such as nvidia.com/gpu");
  }
  std::string folder = out->device_plugin_dir;
  section.String("device_plugin_dir", &folder);
  if (!folder.empty() && folder[0] == '/') {
    out->device_plugin_dir = folder;
  } else {
    section.Fail("device_plugin_dir", "expected an absolute path");
  }
  std::string endpoint = out->endpoint;
  section.String("endpoint", &endpoint);
  if (!endpoint.empty() && endpoint.find('/') == std::string::npos && endpoint != "kubelet.sock") {
    out->endpoint = endpoint;
  } else {
    section.Fail("endpoint", "expected a socket file name (no '/'), not kubelet.sock");
  }
  std::string socket = out->pod_resources_socket;
  section.String("pod_resources_socket", &socket);
  if (socket.empty() || socket[0] == '/') {
    out->pod_resources_socket = socket;
  } else {
    section.Fail("pod_resources_socket", "expected an absolute path, or \"\" for none");
  }
  section.Interval("pod_resources_interval", std::chrono::seconds(1), std::chrono::minutes(10),
                   &out->pod_resources_interval);
  section.Interval("kubelet_timeout", std::chrono::milliseconds(100), std::chrono::seconds(30),
                   &out->kubelet_timeout);
  section.Bool("cdi", &out->is_cdi);
  section.String("cdi_kind", &out->cdi_kind);
  std::string strategy = out->mig_strategy;
  section.String("mig_strategy", &strategy);
  if (strategy == "none" || strategy == "single" || strategy == "mixed") {
    out->mig_strategy = strategy;
  } else {
    section.Fail("mig_strategy", "expected \"none\", \"single\" or \"mixed\"");
  }
}

}  // namespace tarmac::kube
