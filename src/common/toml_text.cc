// SPDX-License-Identifier: Apache-2.0
#include "common/toml_text.h"

#include <fmt/format.h>

namespace tarmac {

Status CheckTomlText(std::string_view text, std::string_view source) {
  int line = 1;
  size_t i = 0;
  auto starts = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      line++;
      i++;
    } else if (c == '#') {  // Comment: to the end of the line.
      while (i < text.size() && text[i] != '\n') i++;
    } else if (starts("\"\"\"") || starts("'''")) {  // Multi-line string.
      std::string_view close = text.substr(i, 3);
      bool has_escapes = close[0] == '"';
      i += 3;
      while (i < text.size() && !starts(close)) {
        if (text[i] == '\n') line++;
        i += (has_escapes && text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ? 2 : 1;
      }
      i += 3;
      while (i < text.size() && text[i] == close[0]) i++;  // Up to two quotes may end the content.
    } else if (c == '"' || c == '\'') {  // One-line string; a newline ends it (toml++ then says why).
      i++;
      while (i < text.size() && text[i] != c && text[i] != '\n') {
        i += (c == '"' && text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ? 2 : 1;
      }
      if (i < text.size() && text[i] == c) i++;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: non-ASCII character outside a string or comment", source, line));
    } else {
      i++;
    }
  }
  return Status::OK();
}

}  // namespace tarmac
