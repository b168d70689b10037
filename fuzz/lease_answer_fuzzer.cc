// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the agent's answers as the client library reads them
// (ipc::DecodeResponse, then client::LeaseAnswerFromJson), and the lease
// request params it builds from command-line words.
#include <cstdint>
#include <string>
#include <string_view>

#include "client/lease_answer.h"
#include "client/lease_request.h"
#include "ipc/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::Result<nlohmann::json> answer = tarmac::ipc::DecodeResponse(text);
  if (answer.ok()) {
    tarmac::Result<tarmac::client::LeaseAnswer> a = tarmac::client::LeaseAnswerFromJson(answer.value(), 1);
    if (a.ok() && a.value().is_granted() && a.value().lease.lease.id != a.value().id) __builtin_trap();
    if (a.ok()) (void)tarmac::client::UuidList(a.value().lease.lease);
  }
  // The same bytes as the words of `tarmac run`'s options.
  tarmac::client::LeaseAsk ask;
  size_t cut = text.find('\n');
  ask.min_free_memory = std::string(text.substr(0, cut));
  ask.max_time = cut == std::string_view::npos ? std::string() : std::string(text.substr(cut + 1));
  ask.uuids = ask.max_time;
  tarmac::Result<nlohmann::json> params = tarmac::client::LeaseParams(ask, "run", "fuzz");
  if (params.ok() && !params.value().contains("request_key")) __builtin_trap();
  return 0;
}
