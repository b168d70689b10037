// SPDX-License-Identifier: Apache-2.0
//
// What a Prometheus-compatible server answers to an instant query: any
// bytes, with any HTTP status, give samples or a clear error, never a
// crash; a success has no series without its value; and the streaming
// decoder of vectors (prom/vector_answer.h) reads what the parse tree reads.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "prom/prom_client.h"
#include "prom/vector_answer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  int status = 200 + (data[0] % 4) * 100 + (data[0] / 4) % 30;  // 200..529
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  tarmac::Result<tarmac::prom::QueryResult> r = tarmac::prom::DecodeQueryAnswer(body, status, "fuzz");
  if (!r.ok() && r.status().message().rfind("fuzz", 0) != 0)
    __builtin_trap();  // Every error names its server.
  // 299: the same answer through the parse tree alone.
  tarmac::Result<tarmac::prom::QueryResult> tree = tarmac::prom::DecodeQueryAnswer(body, 299, "fuzz");
  std::optional<tarmac::prom::QueryResult> fast = tarmac::prom::DecodeVectorAnswer(body);
  if (fast) {
    if (!tree.ok() || tree.value().samples.size() != fast->samples.size() ||
        tree.value().warnings != fast->warnings || tree.value().is_partial != fast->is_partial) {
      __builtin_trap();
    }
    for (size_t i = 0; i < fast->samples.size(); ++i) {
      if (fast->samples[i].labels != tree.value().samples[i].labels) __builtin_trap();
    }
  }
  auto series = tarmac::prom::DecodeSeriesAnswer(body, status, "fuzz");
  if (!series.ok() && series.status().message().rfind("fuzz", 0) != 0) __builtin_trap();
  std::string quoted = tarmac::prom::QuoteLabelValue(body);
  // The literal never ends early: a quote inside is always escaped.
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] == '"' && quoted[i - 1] != '\\') __builtin_trap();
  }
  return 0;
}
