// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the store's parsers of stored bytes (packed sample
// blocks, journal rows) and --since/--until time specs.
#include <cstdint>
#include <string_view>

#include "common/time_spec.h"
#include "store/codec.h"
#include "store/tick_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  tarmac::Result<tarmac::store::Block> block = tarmac::store::DecodeBlock(6000, bytes);
  if (block.ok()) {
    const tarmac::store::Block& b = block.value();
    for (size_t i = 1; i < b.times.size(); ++i) {
      if (b.times[i] <= b.times[i - 1]) __builtin_trap();  // Times only ever increase.
    }
    for (const auto& column : b.columns) {
      if (column.size() != b.times.size()) __builtin_trap();
    }
    // What decodes encodes back to the same block.
    tarmac::Result<tarmac::store::Block> again =
        tarmac::store::DecodeBlock(6000, tarmac::store::EncodeBlock(6000, b));
    if (!again.ok() || again.value().times != b.times || again.value().columns != b.columns) __builtin_trap();
  }
  tarmac::Result<tarmac::store::TickRecord> tick = tarmac::store::DecodeTick(1, bytes);
  if (tick.ok()) {
    tarmac::Result<tarmac::store::TickRecord> again =
        tarmac::store::DecodeTick(1, tarmac::store::EncodeTick(tick.value()));
    if (!again.ok() || again.value().gpus.size() != tick.value().gpus.size()) __builtin_trap();
    for (size_t i = 0; i < tick.value().gpus.size(); ++i) {
      if (again.value().gpus[i].values != tick.value().gpus[i].values) __builtin_trap();
    }
    if (again.value().charges != tick.value().charges) __builtin_trap();
    for (const tarmac::store::ChargeTick& c : tick.value().charges) {
      if (c.share_permille < 0 || c.share_permille > 1000) __builtin_trap();
    }
  }
  (void)tarmac::ParseTimeSpec(bytes, 1800000000);
  return 0;
}
