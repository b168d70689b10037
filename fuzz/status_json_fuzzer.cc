// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: status documents as clients read them (the agent's
// `status` answer, /api/v1/status): node::NodeFromJson, then written back;
// and the utilization series `tarmac top` and the doctor read from it.
// Whatever the bytes, no exception and no crash; a document read back
// reads the same again.
#include <cstdint>
#include <string_view>

#include "node/node_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  for (const auto& [index, series] : tarmac::node::UtilizationSeriesFromStatus(j)) {
    if (index < 0) __builtin_trap();
  }
  tarmac::Result<tarmac::node::NodeView> node_view = tarmac::node::NodeFromJson(j);
  if (!node_view.ok()) return 0;
  nlohmann::json again = tarmac::node::StatusToJson(node_view.value());
  tarmac::Result<tarmac::node::NodeView> twice = tarmac::node::NodeFromJson(again);
  if (!twice.ok() || twice.value().gpus.size() != node_view.value().gpus.size()) __builtin_trap();
  return 0;
}
