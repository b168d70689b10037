// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the lease book against its reference model
// (testutil/lease_model.h), with the operations chosen by the fuzzer's bytes.
// Any disagreement between the book and the model traps.
#include <cstdint>
#include <cstdio>

#include "testutil/lease_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t at = 0;
  auto next = [&](uint32_t bound) -> uint32_t {
    uint32_t v = 0;
    for (int i = 0; i < 2; ++i) v = (v << 8) | (at < size ? data[at++] : 0);
    return v % bound;
  };
  std::string bad = tarmac::sched::model::RunLeaseModel(next, static_cast<int>(size / 3) + 1);
  if (!bad.empty()) {
    std::fprintf(stderr, "lease model: %s\n", bad.c_str());
    __builtin_trap();
  }
  return 0;
}
