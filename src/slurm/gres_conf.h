// SPDX-License-Identifier: Apache-2.0
//
// A node's gres.conf for Slurm, from what tarmac reads of its GPUs: one
// line per GPU with its model as Type, its device file, the CPUs near it
// (Cores=) and whether NVLink joins it to each other GPU (Links=), and the
// matching Gres= for the node's line in slurm.conf. Pure.
#pragma once

#include <optional>
#include <string>

#include "node/node_view.h"

namespace tarmac::slurm {

// "NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3", as Slurm's NVML
// autodetection names types.
std::string GresType(const std::string& model);

// The gres.conf text for node `node`; `dev_dir` holds the device files
// (/dev). kFailedPrecondition-like: the text says so when there are no
// GPUs. Lines start "NodeName=<node> Name=gpu".
//
// A GPU in MIG mode is declared by its instances instead, one line each,
// as Slurm takes MIG without AutoDetect: Type= the profile (1g.10gb), and
// MultipleFiles= the GPU's device file and the instance's two capability
// files (its GPU instance's and compute instance's access minors, from
// `mig_minors`: the text of /proc/driver/nvidia-caps/mig-minors, lines
// "gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13"). Without `mig_minors`
// (or an instance's lines in it) the instance is left out with a comment
// saying why.
std::string RenderGresConf(const node::NodeView& node_view, const std::string& node,
                           const std::string& dev_dir = "/dev",
                           const std::optional<std::string>& mig_minors = std::nullopt);

}  // namespace tarmac::slurm
