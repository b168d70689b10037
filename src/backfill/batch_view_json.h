// SPDX-License-Identifier: Apache-2.0
//
// A batch as the agent's backfill methods answer it (backfill.submit,
// backfill.list, backfill.get, backfill.pause/resume/cancel;
// docs/backfill.md): its spec, the runner's last progress, the runner's pid
// while one runs and the ETA. The agent encodes from BatchView; clients
// decode into it. Decoding never throws: kCorruption naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "backfill/batch_spec.h"
#include "common/result.h"

namespace tarmac::backfill {

struct BatchView {
  BatchSpec spec;
  BatchProgress progress;
  std::optional<int64_t> runner_pid;  // While a runner works on it.
  std::optional<double> eta_s;        // While it runs, at the recent rate.
};

nlohmann::json EncodeBatchView(const BatchView& view);
Result<BatchView> DecodeBatchView(const nlohmann::json& j);
// {"batch": {...}} (submit, get, pause, resume, cancel).
Result<BatchView> DecodeBatchAnswer(const nlohmann::json& answer);
// {"batches": [...]} (list).
Result<std::vector<BatchView>> DecodeBatchList(const nlohmann::json& answer);

}  // namespace tarmac::backfill
