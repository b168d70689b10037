// SPDX-License-Identifier: Apache-2.0
//
// Backfill batch files: any bytes give requests or a clear error, never a
// crash; a parsed file holds unique ids and one model.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "backfill/batch_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::Result<tarmac::backfill::BatchInput> in =
      tarmac::backfill::ParseBatchInput(text, "fuzz.jsonl", {"m"});
  if (!in.ok()) return 0;
  std::set<std::string> ids;
  for (const tarmac::backfill::BatchRequest& r : in.value().requests) {
    if (!ids.insert(r.custom_id).second) __builtin_trap();
    if (r.body["model"] != in.value().model) __builtin_trap();
  }
  return 0;
}
