// SPDX-License-Identifier: Apache-2.0
#include "http/head_refusal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace tarmac::http {
namespace {

std::string PlainAnswer(int status, std::string_view reason, std::string_view text,
                        std::string_view extra = "") {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}\n",
      status, reason, text.size() + 1, extra, text);
}

bool SameNameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

}  // namespace

std::optional<std::string> HeadRefusal(std::string_view head) {
  size_t end = head.find("\r\n\r\n");
  size_t head_size = end == std::string_view::npos ? head.size() : end + 4;
  if (head_size > kMaxHeadBytes) {
    size_t line_end = head.find("\r\n");
    if (line_end == std::string_view::npos || line_end > kMaxHeadBytes) {
      return PlainAnswer(414, "URI Too Long",
                         fmt::format("the request line is over {} bytes", kMaxHeadBytes));
    }
    return PlainAnswer(431, "Request Header Fields Too Large",
                       fmt::format("the request's headers are over {} bytes", kMaxHeadBytes));
  }
  if (end == std::string_view::npos) return std::nullopt;  // Not whole yet.
  std::string_view method = head.substr(0, head.find(' '));
  if (method != "GET" && method != "HEAD") {
    return PlainAnswer(405, "Method Not Allowed", "this server answers GET and HEAD only",
                       "Allow: GET, HEAD\r\n");
  }
  std::string_view lines = head.substr(0, end);
  for (size_t at = lines.find("\r\n"); at != std::string_view::npos;) {
    size_t next = lines.find("\r\n", at + 2);
    std::string_view line =
        lines.substr(at + 2, next == std::string_view::npos ? std::string_view::npos : next - at - 2);
    at = next;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (SameNameIgnoringCase(name, "transfer-encoding") ||
        (SameNameIgnoringCase(name, "content-length") && value != "0")) {
      return PlainAnswer(400, "Bad Request", "a request to this server carries no body (GET and HEAD only)");
    }
  }
  return std::nullopt;
}

}  // namespace tarmac::http
