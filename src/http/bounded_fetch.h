// SPDX-License-Identifier: Apache-2.0
//
// The one way tarmac reads an answer from a server it does not control (a
// Prometheus or a store that speaks its API, an inference engine). Such a
// server may be broken or hostile: an answer of gigabytes, a body that never
// ends, one byte a second, JSON nested a million deep. Every answer is read
// here within limits, as curl's --max-filesize and --max-time bound it:
//
//   size      the body (after any decompression) stops at max_body_bytes;
//   deadline  the whole exchange (connect, request, head, body) ends at
//             `deadline`, however the server trickles, not each read;
//   depth     a JSON body nested deeper than max_json_depth is refused
//             before any parser sees it.
//
// A limit hit is an error naming it: kResourceExhausted for the size or the
// depth, kDeadlineExceeded for the deadline. Memory held for an answer is
// at most max_body_bytes (reserved at once when the server says the length)
// plus httplib's head (8 KiB a line); answers read together at most
// max_shared_bytes between them.
//
// Thread safety: Fetch may run on many threads at once, each on its own
// httplib::Client; Abort (through `abort`) may come from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace httplib {
class Client;
struct Request;
}  // namespace httplib

namespace tarmac::http {

struct FetchLimits {
  // The most bytes of body kept; one more ends the answer.
  int64_t max_body_bytes = 64ll << 20;
  // The whole exchange, from connecting to the body's last byte.
  std::chrono::milliseconds deadline{10000};
  // Deepest nesting of arrays and objects a JSON body may have; 0: not
  // checked (a body that is not JSON).
  int max_json_depth = 64;
  // Named in errors: "prometheus http://...:9090".
  std::string what;
  // The timeout an error names (a reading's whole, which `deadline` may be
  // what is left of); 0: `deadline`.
  std::chrono::milliseconds named_timeout{0};
  // Answers read together (a reading's questions asked at once) share
  // `shared`: the bytes of every body held, until each answer is let go
  // (FetchedAnswer::held); together at most `max_shared_bytes`. Null: only
  // this answer's own limit.
  std::shared_ptr<std::atomic<int64_t>> shared;
  int64_t max_shared_bytes = 0;
  // Room kept past a body whose length the server says up front, for a
  // parser that reads a few bytes past the text (the body's capacity; its
  // size is the body's): the body is then not copied to be decoded.
  size_t spare_bytes = 0;
};

struct FetchedAnswer {
  int status = 0;
  std::string body;
  std::string content_type;
  // While kept, the body's bytes count against FetchLimits::shared; let it
  // go (reset) once the body is decoded and dropped.
  std::shared_ptr<void> held;
};

// Sends `request` on `client` (whose address, credentials and TLS the
// caller set) and reads the answer within `limits`. kUnavailable when the
// server cannot be reached or the connection broke; kCancelled when
// `*abort` became true (then the exchange ends at once).
Result<FetchedAnswer> Fetch(httplib::Client* client, httplib::Request request, const FetchLimits& limits,
                            const std::atomic<bool>* abort = nullptr);

// Whether `json` nests arrays and objects at most `max_depth` deep (strings
// skipped, escapes honoured). Pure; linear.
bool JsonDepthWithin(std::string_view json, int max_depth);

// "64 MiB", "512 KiB", "17 bytes": a limit in words for an error message.
std::string LimitWords(int64_t bytes);

}  // namespace tarmac::http
