// SPDX-License-Identifier: Apache-2.0
//
// The Kubernetes names of a container: pod, namespace and container name.
// The cgroup path gives only the container id and the pod UID; the names
// come from the container runtime's bundle on the node, where containerd's
// CRI plugin and CRI-O write them as annotations of each container's OCI
// config.json:
//   containerd: io.kubernetes.cri.sandbox-name / sandbox-namespace /
//               container-name, in <state dir>/<id>/config.json;
//   CRI-O:      io.kubernetes.pod.name / pod.namespace / container.name, in
//               <state dir>/<id>/userdata/config.json.
// Read once per container on the sampler thread when a new GPU process is
// first seen (never on the scrape path, never through the kubelet), and
// cached.
//
// Thread safety: one thread at a time.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "node/process_details.h"

namespace tarmac::sampler {

// The names in an OCI config.json's annotations; empty when the text is not
// JSON or has none. Pure.
node::KubernetesNames ParseOciAnnotations(std::string_view config_json);

// Where containerd (plain, k3s, MicroK8s) and CRI-O keep their bundles.
std::vector<std::string> DefaultRuntimeStateDirs();

class ContainerNames {
 public:
  explicit ContainerNames(std::vector<std::string> state_dirs = DefaultRuntimeStateDirs())
      : state_dirs_(std::move(state_dirs)) {}

  // The names of container `id` (hex); empty when no bundle names it.
  const node::KubernetesNames& Lookup(const std::string& id);

 private:
  static constexpr size_t kMaxCached = 4096;
  std::vector<std::string> state_dirs_;
  std::map<std::string, node::KubernetesNames> cache_;  // Misses too.
};

}  // namespace tarmac::sampler
