// SPDX-License-Identifier: Apache-2.0
//
// A node's gres.conf for Slurm, from what tarmac reads of its GPUs: one
// line per GPU with its model as Type, its device file, the CPUs near it
// (Cores=) and whether NVLink joins it to each other GPU (Links=), and the
// matching Gres= for the node's line in slurm.conf. Pure.
#pragma once

#include <string>

#include "fleet/fleet_view.h"

namespace tarmac::cli {

// "NVIDIA H100 80GB HBM3" -> "nvidia_h100_80gb_hbm3", as Slurm's NVML
// autodetection names types.
std::string GresType(const std::string& model);

// The gres.conf text for node `node`; `dev_dir` holds the device files
// (/dev). kFailedPrecondition-like: the text says so when there are no
// GPUs. Lines start "NodeName=<node> Name=gpu".
std::string RenderGresConf(const fleet::FleetView& fleet, const std::string& node, const std::string& dev_dir = "/dev");

}  // namespace tarmac::cli
