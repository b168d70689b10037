// SPDX-License-Identifier: Apache-2.0
//
// Who a GPU process is: its owner, command, start time and parent from
// /proc, and where it runs (container, Kubernetes pod, systemd unit, Slurm
// job) from its cgroup and its container runtime. Plain data, filled by the
// sampler's process attribution; read by every consumer of a snapshot.
#pragma once

#include <cstdint>
#include <string>

namespace tarmac::node {

struct CgroupIdentity {
  std::string container_id;  // 64 hex digits.
  std::string pod_uid;       // Kubernetes pod UID, with dashes.
  std::string systemd_unit;  // e.g. "train.service", "session-3.scope".
  std::string slurm_job_id;  // e.g. "1234".
};

struct KubernetesNames {
  std::string pod;
  std::string pod_namespace;
  std::string container;
  bool empty() const { return pod.empty() && pod_namespace.empty() && container.empty(); }
};

struct ProcessDetails {
  int64_t pid = 0;
  bool exists = false;  // False when /proc has no such process (or no access).
  int64_t uid = -1;     // Effective uid (owner of /proc/<pid>).
  std::string user;     // Login name, or the uid as text when unknown.
  std::string name;     // /proc/<pid>/comm
  std::string command;  // Command line, arguments joined by spaces.
  int64_t parent_pid = 0;
  int64_t start_ticks = 0;     // Clock ticks after boot (/proc/<pid>/stat).
  CgroupIdentity cgroup;       // Container, pod, systemd unit, Slurm job.
  KubernetesNames kubernetes;  // Pod, namespace, container; when known.
};

}  // namespace tarmac::node
