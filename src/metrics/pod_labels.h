// SPDX-License-Identifier: Apache-2.0
//
// The Kubernetes pod of a GPU or MIG instance, as dcgm-exporter's
// Kubernetes mode labels its series: pod, namespace, container, and
// pod_uid (dcgm-exporter 4.8) where it is known. Pure; thread-safe.
#pragma once

#include <optional>

#include "metrics/exposition.h"
#include "node/node_view.h"

namespace tarmac::metrics {

// The one Kubernetes container every process on `gpu` (with
// `gpu_instance_id`: every process in that MIG instance) runs in; null when
// there is none, or a process is in another container or in no pod.
const node::KubernetesNames* SoleContainer(const node::GpuView& gpu, std::optional<int> gpu_instance_id);

// The pod the GPU belongs to: the pod the kubelet allocated it to (pod
// resources), running or not; else, for a GPU outside any allocation, the
// pod whose container holds it, only when every process on the GPU is in
// that one container (a GPU shared by pods, or with no pod, has none).
const node::KubernetesNames* GpuPod(const node::GpuView& gpu);

// The pod an instance belongs to: the kubelet's allocation of it, else the
// one container all its processes are in; null when neither.
const node::KubernetesNames* MigInstancePod(const node::GpuView& gpu, const node::MigInstance& instance);

// Adds pod, namespace and container of `pod`; with `with_uid`, also
// pod_uid when a process on `gpu` (in instance `gpu_instance_id`, when
// given) runs in that pod and its cgroup names the pod's UID (the
// pod-resources API does not give it). Device series carry pod_uid only
// when [http] device_pod_uid asks, as dcgm-exporter's
// --kubernetes-enable-pod-uid does: a UID changes with every restart of a
// pod of the same name, and so would every series of its GPU.
void AddPodLabels(const node::KubernetesNames& pod, const node::GpuView& gpu,
                  std::optional<int> gpu_instance_id, bool with_uid, Labels* labels);

}  // namespace tarmac::metrics
