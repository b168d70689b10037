// SPDX-License-Identifier: Apache-2.0
//
// gzip for answers compressed once and sent many times (the web console's
// script, style and page, compressed when the routes are made), and the
// Accept-Encoding test that picks them.
#pragma once

#include <string>
#include <string_view>

namespace tarmac::http {

// `text` as one gzip member (RFC 1952), at the best compression.
std::string Gzip(std::string_view text);

// Whether an Accept-Encoding header admits gzip: "gzip" or "*" listed
// without q=0 (RFC 9110 12.5.3). Case-insensitive.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace tarmac::http
