// SPDX-License-Identifier: Apache-2.0
//
// A successful instant-vector answer of /api/v1/query decoded as it is
// read (simdjson's on-demand parser), without a parse tree: ten thousand
// nodes' answer is 80,000 series and megabytes of text, and a parse tree
// costs ten times the text in memory and most of the decoding time. It
// accepts exactly what the parse tree accepts: every value is read to its
// last byte, the keys and strings are checked as UTF-8, nothing may follow
// the answer, and the last of a repeated key counts. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "prom/prom_client.h"

namespace tarmac::prom {

// The room past an answer's text the decoder reads (and does not copy the
// text when the string has it as spare capacity).
inline constexpr size_t kVectorAnswerPadding = 64;

// The samples, warnings and partial flag of `body` when it is a successful
// answer whose data is a vector of {metric, value} items; nothing for
// anything else (an error, another result type, a malformed or unexpected
// shape), which the caller then decodes the slow way to say what is wrong.
std::optional<QueryResult> DecodeVectorAnswer(const std::string& body);

}  // namespace tarmac::prom
