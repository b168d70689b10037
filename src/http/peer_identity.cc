// SPDX-License-Identifier: Apache-2.0
#include "http/peer_identity.h"

#include <charconv>
#include <vector>

#include "common/proc_files.h"

namespace tarmac::http {
namespace {

// The port of "0100007F:1F95" (hexadecimal), or -1.
int PortOf(std::string_view address) {
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return -1;
  int port = -1;
  std::string_view hex = address.substr(colon + 1);
  auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), port, 16);
  return ec == std::errc() && end == hex.data() + hex.size() ? port : -1;
}

bool IsLoopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1" || address.rfind("::ffff:127.", 0) == 0;
}

}  // namespace

std::optional<int64_t> ConnectionOwner(std::string_view text, int client_port, int server_port) {
  size_t line_start = text.find('\n');  // After the header.
  while (line_start != std::string_view::npos && line_start + 1 < text.size()) {
    size_t line_end = text.find('\n', line_start + 1);
    std::string_view line =
        text.substr(line_start + 1,
                    line_end == std::string_view::npos ? std::string_view::npos : line_end - line_start - 1);
    line_start = line_end;
    std::vector<std::string_view> fields;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = line.find(' ', i);
      if (i < line.size())
        fields.push_back(line.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
      i = j == std::string_view::npos ? line.size() : j;
    }
    // sl local rem st tx:rx tr:when retrnsmt uid ...
    if (fields.size() < 8) continue;
    if (PortOf(fields[1]) != client_port || PortOf(fields[2]) != server_port) continue;
    int64_t uid = -1;
    auto [end, ec] = std::from_chars(fields[7].data(), fields[7].data() + fields[7].size(), uid);
    if (ec == std::errc() && end == fields[7].data() + fields[7].size() && uid >= 0) return uid;
  }
  return std::nullopt;
}

std::string ClientIdentity(const std::string& peer_address, int peer_port, int local_port) {
  if (IsLoopback(peer_address)) {
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      std::string text;
      if (!ReadSmallFile(table, &text, 16 << 20)) continue;
      if (std::optional<int64_t> uid = ConnectionOwner(text, peer_port, local_port))
        return "uid " + std::to_string(*uid);
    }
  }
  return "address " + peer_address;
}

}  // namespace tarmac::http
