// SPDX-License-Identifier: Apache-2.0
//
// What the HTTP server refuses from a request head alone, before any
// worker or route sees it (http/server.h). Pure; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tarmac::http {

// A request head longer than this is refused (cpp-httplib caps the line
// and each header at 8 KiB).
inline constexpr size_t kMaxHeadBytes = 16 * 1024;

// What the head reader answers by itself before closing the connection, or
// nothing for a head the server serves. `head` is what the connection has
// sent so far. A head over kMaxHeadBytes: 414 when even its request line
// is, else 431. A method other than GET and HEAD: 405. A whole head that
// announces a body (Content-Length other
// than 0, or any Transfer-Encoding): 400, since the server takes GET and
// HEAD only and a body left on the connection would be read as the next
// request (the shape of request smuggling behind a proxy). Pure.
std::optional<std::string> HeadRefusal(std::string_view head);

}  // namespace tarmac::http
