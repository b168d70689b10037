// SPDX-License-Identifier: Apache-2.0
//
// What a Slurm job's prolog and epilog tell the agent, in one format for
// both sides: `tarmac slurm prolog` builds it from Slurm's environment, the
// agent's slurm.prolog and slurm.epilog methods check it (leases/
// slurm_jobs.cc). Also the job's GPUs as Slurm's environment and cgroup name
// them, and the line the epilog prints from the agent's answer. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tarmac::slurm {

// A Slurm job id: digits, with an array or het-job suffix ("123_4",
// "123+1"), at most 64 characters.
bool IsJobId(const std::string& id);

// A user or partition name as listings, events and the history may show it:
// 1 to 256 printable ASCII characters, no '/' or ':'.
bool IsAccountName(const std::string& name);

// slurm.prolog's params: the job, its owner (SLURM_JOB_UID, SLURM_JOB_USER),
// its partition when Slurm names one, and its GPU indices on this node
// (distinct, not negative; whether this node has them is the agent's to say).
struct PrologRequest {
  std::string job;
  int64_t uid = -1;  // 0 to 4294967294 (-1 means "none" to the kernel)
  std::string user;
  std::optional<std::string> partition;
  std::vector<int> gpus;
};

nlohmann::json PrologRequestToJson(const PrologRequest& request);

// params.job of slurm.prolog or slurm.epilog. kInvalidArgument naming
// params.job otherwise.
Result<std::string> JobOfParams(const nlohmann::json& params);

// slurm.prolog's params, each checked; kInvalidArgument naming the first
// member that is wrong and what it should be.
Result<PrologRequest> PrologRequestFromJson(const nlohmann::json& params);

// The prolog's request from Slurm's environment (SLURM_JOB_ID,
// SLURM_JOB_UID, SLURM_JOB_USER, SLURM_JOB_PARTITION and the job's GPUs
// from JobGpus). `devices_list`, when given, is the job's cgroup
// devices.list, read when the environment names no GPU. kInvalidArgument
// naming the variable that is missing or wrong.
Result<PrologRequest> PrologRequestFromEnvironment(const std::map<std::string, std::string>& env,
                                                   const std::optional<std::string>& devices_list);

// The job's GPU indices from Slurm's environment: SLURM_JOB_GPUS, else
// CUDA_VISIBLE_DEVICES ("0,2"); empty when it has none. kInvalidArgument,
// naming the variable, for anything but indices.
Result<std::vector<int>> JobGpus(const std::map<std::string, std::string>& env);

// The GPUs a job's cgroup (v1 devices controller, Slurm's ConstrainDevices)
// lets it open: the minor numbers of "c 195:N" rules in its devices.list
// text (195:255 is nvidiactl and 195:254 nvidia-modeset, not GPUs; no
// minor above them is a GPU), as GPU indices (NVML's minor numbers are the indices on a
// node's usual setup). Under cgroup v2 the rules live in eBPF programs and
// cannot be read: there is no such file.
std::vector<int> GpusOfDevicesList(const std::string& devices_list);

}  // namespace tarmac::slurm
