// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: nvidia-smi style --query-gpu / --format arguments.
#include <cstdint>
#include <string_view>

#include "cli/query_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tarmac::cli::ParseCsvFormat(text);
  tarmac::Result<std::vector<const tarmac::cli::GpuField*>> gpu = tarmac::cli::ResolveGpuFields(text);
  if (gpu.ok()) {
    tarmac::node::NodeView node_view;
    node_view.gpus.resize(1);
    (void)tarmac::cli::RenderGpuQuery(node_view, gpu.value(), tarmac::cli::CsvFormat{});
  }
  (void)tarmac::cli::ResolveAppFields(text);
  return 0;
}
