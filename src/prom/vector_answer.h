// SPDX-License-Identifier: Apache-2.0
//
// A successful instant-vector answer of /api/v1/query decoded as it is
// read (nlohmann's SAX interface), without a parse tree: a thousand nodes'
// answer is tens of thousands of series, and the tree costs ten times the
// text in memory and most of the decoding time. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "prom/prom_client.h"

namespace tarmac::prom {

// The samples, warnings and partial flag of `body` when it is a successful
// answer whose data is a vector of {metric, value} items; nothing for
// anything else (an error, another result type, a malformed or unexpected
// shape), which the caller then decodes the slow way to say what is wrong.
std::optional<QueryResult> DecodeVectorAnswer(std::string_view body);

}  // namespace tarmac::prom
