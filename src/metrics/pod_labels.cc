// SPDX-License-Identifier: Apache-2.0
#include "metrics/pod_labels.h"

namespace tarmac::metrics {

const node::KubernetesNames* SoleContainer(const node::GpuView& g, std::optional<int> gpu_instance_id) {
  const node::KubernetesNames* pod = nullptr;
  for (const node::ProcessView& p : g.processes) {
    if (gpu_instance_id && p.process.gpu_instance_id != gpu_instance_id) continue;
    const node::KubernetesNames& k = p.details.kubernetes;
    if (k.pod.empty()) return nullptr;
    if (pod != nullptr &&
        (pod->pod != k.pod || pod->pod_namespace != k.pod_namespace || pod->container != k.container)) {
      return nullptr;
    }
    pod = &k;
  }
  return pod;
}

const node::KubernetesNames* GpuPod(const node::GpuView& g) {
  if (g.allocated_to) return &*g.allocated_to;
  return SoleContainer(g, std::nullopt);
}

const node::KubernetesNames* MigInstancePod(const node::GpuView& g, const node::MigInstance& m) {
  if (auto it = g.mig_allocated_to.find(m.uuid); it != g.mig_allocated_to.end()) return &it->second;
  return SoleContainer(g, m.gpu_instance_id);
}

void AddPodLabels(const node::KubernetesNames& pod, const node::GpuView& g,
                  std::optional<int> gpu_instance_id, bool with_uid, Labels* labels) {
  labels->emplace_back("pod", pod.pod);
  labels->emplace_back("namespace", pod.pod_namespace);
  labels->emplace_back("container", pod.container);
  if (!with_uid) return;
  for (const node::ProcessView& p : g.processes) {
    if (gpu_instance_id && p.process.gpu_instance_id != gpu_instance_id) continue;
    const node::KubernetesNames& k = p.details.kubernetes;
    if (k.pod == pod.pod && k.pod_namespace == pod.pod_namespace && !p.details.cgroup.pod_uid.empty()) {
      labels->emplace_back("pod_uid", p.details.cgroup.pod_uid);
      return;
    }
  }
}

}  // namespace tarmac::metrics
