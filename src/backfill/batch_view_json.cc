// SPDX-License-Identifier: Apache-2.0
#include "backfill/batch_view_json.h"

#include <fmt/format.h>

#include "common/json_fields.h"

namespace tarmac::backfill {

using nlohmann::json;

json EncodeBatchView(const BatchView& view) {
  json j = EncodeBatchSpec(view.spec);
  j["progress"] = EncodeProgress(view.progress);
  j["runner_pid"] = view.runner_pid ? json(*view.runner_pid) : json(nullptr);
  j["eta_s"] = view.eta_s ? json(*view.eta_s) : json(nullptr);
  return j;
}

Result<BatchView> DecodeBatchView(const json& j) {
  BatchView view;
  Result<BatchSpec> spec = DecodeBatchSpec(j, "batch");
  if (!spec.ok()) return Status::Corruption(spec.status().message());
  view.spec = std::move(spec).value();
  JsonFields f(j, "batch");
  f.Optional("runner_pid", &view.runner_pid);
  f.Optional("eta_s", &view.eta_s);
  JsonFields progress = f.Object("progress");  // Its type checked here; its fields read below.
  if (!f.ok()) return Status::Corruption(f.status().message());
  view.progress = DecodeProgress(j.contains("progress") ? j["progress"] : json());
  return view;
}

Result<BatchView> DecodeBatchAnswer(const json& answer) {
  if (!answer.is_object() || !answer.contains("batch")) return Status::Corruption("the answer has no batch");
  return DecodeBatchView(answer["batch"]);
}

Result<std::vector<BatchView>> DecodeBatchList(const json& answer) {
  return DecodeList<BatchView>(answer, "batches", DecodeBatchView);
}

}  // namespace tarmac::backfill
