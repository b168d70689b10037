// SPDX-License-Identifier: Apache-2.0
#include "common/terminal_text.h"

#include <fmt/format.h>

#include <cstdint>

namespace tarmac {
namespace {

// The length of the well-formed UTF-8 character at text[i] (2 to 4), or 0
// when the bytes there are not one (overlong forms, surrogates and code
// points past U+10FFFF included). Sets *code_point.
size_t Utf8Length(std::string_view text, size_t i, uint32_t* code_point) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length = lead >= 0xc2 && lead <= 0xdf   ? 2
                  : lead >= 0xe0 && lead <= 0xef ? 3
                  : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  uint32_t cp = lead & (length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  if ((length == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (length == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
    return 0;
  }
  *code_point = cp;
  return length;
}

// Code points a terminal would act on or that reorder or hide text: C1
// controls, bidi embeddings, overrides and isolates, zero-width marks, the
// line and paragraph separators, the byte-order mark.
bool IsHiddenCodePoint(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || (cp >= 0x200b && cp <= 0x200f) ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff;
}

void AppendControl(unsigned char c, std::string* out) {
  switch (c) {
    case 0x1b:
      out->append("\\e");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\r':
      out->append("\\r");
      return;
    case '\t':
      out->append("\\t");
      return;
    case '\a':
      out->append("\\a");
      return;
    case '\b':
      out->append("\\b");
      return;
    case '\f':
      out->append("\\f");
      return;
    case '\v':
      out->append("\\v");
      return;
    case '\0':
      out->append("\\0");
      return;
    default:
      out->append(fmt::format("\\x{:02x}", c));
  }
}

std::string Visible(std::string_view text, bool keep_line_breaks) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n' && keep_line_breaks) {
        out.push_back('\n');
      } else if (c < 0x20 || c == 0x7f) {
        AppendControl(c, &out);
      } else if (c == '\\') {
        out.append("\\\\");
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t length = Utf8Length(text, i, &cp);
    if (length == 0) {
      out.append(fmt::format("\\x{:02x}", c));
      ++i;
    } else if (IsHiddenCodePoint(cp)) {
      out.append(fmt::format("\\u{:04x}", cp));
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace

std::string ForTerminal(std::string_view foreign) { return Visible(foreign, false); }

std::string ForTerminalLines(std::string_view text) { return Visible(text, true); }

bool IsTerminalSafe(std::string_view text) {
  // Safe when ForTerminal would change nothing but double its backslashes.
  std::string doubled;
  doubled.reserve(text.size());
  for (char c : text) doubled.append(c == '\\' ? 2 : 1, c);
  return Visible(text, false) == doubled;
}

}  // namespace tarmac
