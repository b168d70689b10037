// SPDX-License-Identifier: Apache-2.0
//
// Who runs a process, from its cgroup path (/proc/<pid>/cgroup): the
// container (Docker, containerd, CRI-O, Podman), the Kubernetes pod, the
// systemd unit and the Slurm job, when the path shows them. Works for cgroup
// v2 ("0::/path") and v1 (one line per hierarchy). Pure function.
#pragma once

#include <string>
#include <string_view>

namespace tarmac::sampler {

struct CgroupIdentity {
  std::string container_id;  // 64 hex digits.
  std::string pod_uid;       // Kubernetes pod UID, with dashes.
  std::string systemd_unit;  // e.g. "train.service", "session-3.scope".
  std::string slurm_job_id;  // e.g. "1234".
};

CgroupIdentity ParseCgroup(std::string_view proc_cgroup_text);

}  // namespace tarmac::sampler
