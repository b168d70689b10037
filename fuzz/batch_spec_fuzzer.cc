// SPDX-License-Identifier: Apache-2.0
//
// batch.json and progress.json as any bytes: a batch either decodes (and
// then encodes and decodes again to the same thing) or is refused with a
// message; progress never fails and never crashes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "backfill/batch_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  tarmac::Result<tarmac::backfill::BatchSpec> spec = tarmac::backfill::DecodeBatchSpec(j, "fuzz");
  if (spec.ok()) {
    nlohmann::json again = tarmac::backfill::EncodeBatchSpec(spec.value());
    tarmac::Result<tarmac::backfill::BatchSpec> back = tarmac::backfill::DecodeBatchSpec(again, "fuzz");
    if (!back.ok() || tarmac::backfill::EncodeBatchSpec(back.value()) != again) __builtin_trap();
    tarmac::backfill::CheckBatchSpec(spec.value()).IgnoreError();
  } else if (spec.status().message().empty()) {
    __builtin_trap();
  }
  tarmac::backfill::BatchProgress p = tarmac::backfill::DecodeProgress(j);
  (void)tarmac::backfill::EtaSeconds(p);
  return 0;
}
