// SPDX-License-Identifier: Apache-2.0
//
// Who runs a process, from its cgroup path (/proc/<pid>/cgroup): the
// container (Docker, containerd, CRI-O, Podman), the Kubernetes pod, the
// systemd unit and the Slurm job, when the path shows them. Works for cgroup
// v2 ("0::/path") and v1 (one line per hierarchy). Pure function.
#pragma once

#include <string_view>

#include "node/process_details.h"

namespace tarmac::sampler {

node::CgroupIdentity ParseCgroup(std::string_view proc_cgroup_text);

}  // namespace tarmac::sampler
