// SPDX-License-Identifier: Apache-2.0
//
// What the agent answers Slurm's prolog and epilog (slurm.prolog,
// slurm.epilog; docs/slurm.md), both ways: the agent encodes the epilog's
// answer from EpilogAnswer, `tarmac slurm` decodes both. Decoding never
// throws: kCorruption naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tarmac::slurm {

// slurm.prolog: the job's lease (its id and GPU indices), none when the job
// has no GPU here, or that it waits for backfill to give way first.
struct PrologAnswer {
  std::string job;
  std::optional<int64_t> lease_id;
  std::vector<int> gpus;
  bool is_waiting = false;
  int64_t retry_after_ms = 200;
  std::string detail;  // What it waits for, or why it holds nothing.
};
Result<PrologAnswer> PrologAnswerFromJson(const nlohmann::json& j);

// slurm.epilog: how the job used its GPUs while the agent watched, and what
// it left on them (terminated).
struct EpilogAnswer {
  struct Leftover {
    int64_t pid = 0;
    int gpu = 0;
    std::string command;
  };
  std::string job;
  int64_t lease_id = 0;
  std::vector<int> gpus;
  double held_seconds = 0;
  double idle_gpu_seconds = 0;
  std::optional<double> mean_utilization_ratio;  // Unknown without samples.
  int64_t memory_max_bytes = 0;
  std::vector<Leftover> terminated;
};
nlohmann::json EpilogAnswerToJson(const EpilogAnswer& a);
Result<EpilogAnswer> EpilogAnswerFromJson(const nlohmann::json& j);

// "tarmac: job 42: 2 GPUs for 1.30 h, mean 4 %, 1.90 GPU-hours idle, peak
// 12.0 GiB; 1 process left on its GPUs terminated": the line the epilog
// logs.
std::string EpilogSummary(const EpilogAnswer& a);

}  // namespace tarmac::slurm
