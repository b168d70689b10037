// SPDX-License-Identifier: Apache-2.0
//
// Whatever an engine sends back (JSON, NDJSON, server-sent events, junk),
// reading it never crashes, and a result line always names its request.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backfill/engine_reply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  static constexpr std::string_view kUrls[] = {"/api/generate", "/api/chat", "/v1/chat/completions",
                                               "/v1/completions"};
  static constexpr std::string_view kTypes[] = {"application/json", "application/x-ndjson",
                                                "text/event-stream"};
  int status = data[1] % 2 == 0 ? 200 : 400 + data[1] % 200;
  tarmac::backfill::EngineReply r =
      tarmac::backfill::ReadEngineReply("id-1", kUrls[data[0] % 4], status, body, kTypes[(data[0] / 4) % 3]);
  using Verdict = tarmac::backfill::EngineReply::Verdict;
  if ((r.verdict == Verdict::kDone || r.verdict == Verdict::kFailItem) && r.line["custom_id"] != "id-1")
    __builtin_trap();
  return 0;
}
