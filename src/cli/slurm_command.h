// SPDX-License-Identifier: Apache-2.0
//
// `tarmac slurm gres-conf|prolog|epilog`: tarmac under a Slurm cluster
// (docs/slurm.md).
//  - gres-conf prints the node's gres.conf from what tarmac reads of its
//    GPUs (slurm/gres_conf.h).
//  - prolog and epilog are what Slurm's Prolog= and Epilog= scripts call
//    (deploy/slurm/), as root, with Slurm's environment: SLURM_JOB_ID,
//    SLURM_JOB_UID, SLURM_JOB_USER and SLURM_JOB_GPUS (else
//    CUDA_VISIBLE_DEVICES). The prolog records the job's GPUs as a lease of
//    kind slurm; the epilog ends it, terminates what the job left on its
//    GPUs and prints one line of what the job did with them. Both fail
//    safe: when the agent cannot be reached or refuses, they say why on
//    stderr and exit 0, so that no job is held up by tarmac (--strict: exit
//    1 instead). What they send is slurm/job_request.h.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "cli/options.h"

namespace tarmac::cli {

struct SlurmOptions {
  std::string node;              // gres-conf --node (default: this host's short name)
  std::string dev_dir = "/dev";  // gres-conf --dev-dir: where the device files are
  std::string mig_minors = "/proc/driver/nvidia-caps/mig-minors";  // gres-conf --mig-minors
  bool json = false;                                               // prolog/epilog --json: the agent's answer
  bool strict = false;  // prolog/epilog --strict: exit 1 when the agent cannot record it
  std::string cgroup_root = "/sys/fs/cgroup";  // prolog --cgroup-root: where the job's cgroup is
};

// Adds `slurm` and its three commands; returns them by name.
std::map<std::string, CLI::App*> AddSlurmCommand(CLI::App* app, SlurmOptions* options, GlobalOptions* global);
int RunSlurm(const std::string& name, const GlobalOptions& global, const SlurmOptions& options, Clock* clock,
             Logger* logger);

}  // namespace tarmac::cli
