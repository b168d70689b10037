// SPDX-License-Identifier: Apache-2.0
#include "common/text_wrap.h"

namespace tarmac {

std::string WrapText(std::string_view text, size_t width, size_t first_column, size_t indent) {
  if (width == 0) width = static_cast<size_t>(-1);  // No limit; line breaks still indented.
  std::string out;
  size_t column = first_column;
  bool is_line_start = true;
  bool needs_indent = false;
  size_t at = 0;
  while (at < text.size()) {
    if (text[at] == '\n') {
      out += '\n';  // Indented when a word follows: no line of spaces alone.
      column = indent;
      is_line_start = true;
      needs_indent = true;
      ++at;
      continue;
    }
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    size_t end = text.find_first_of(" \n", at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(at, end - at);
    size_t columns = TextColumns(word);
    // A word longer than a whole line (a list of UUIDs) is cut where the
    // line ends; the rest goes on the next.
    size_t room = width > indent ? width - indent : 1;
    if (columns > room && width != static_cast<size_t>(-1)) {
      size_t fits = column < width ? width - column - (is_line_start ? 0 : 1) : 0;
      if (fits < 8 && !is_line_start) {  // Start it on a line of its own.
        out += '\n';
        column = indent;
        is_line_start = true;
        needs_indent = true;
        continue;
      }
      if (needs_indent) {
        out += std::string(indent, ' ');
        needs_indent = false;
      }
      if (!is_line_start) out += ' ';
      size_t cut = 0;
      for (size_t n = 0; cut < word.size() && n < fits; ++n) {
        ++cut;
        while (cut < word.size() && (static_cast<unsigned char>(word[cut]) & 0xc0) == 0x80) ++cut;
      }
      // A list (UUIDs joined by commas) is cut after its last comma that
      // fits, so no item is cut in two; a word without one where it ends.
      if (size_t comma = word.substr(0, cut).rfind(','); cut < word.size() && comma != std::string_view::npos)
        cut = comma + 1;
      out += word.substr(0, cut);
      out += '\n';
      column = indent;
      is_line_start = true;
      needs_indent = true;
      at += cut;
      continue;
    }
    if (!is_line_start && column + 1 + columns > width) {
      out += '\n';
      column = indent;
      is_line_start = true;
      needs_indent = true;
    }
    if (needs_indent) {
      out += std::string(indent, ' ');
      needs_indent = false;
    }
    if (!is_line_start) {
      out += ' ';
      ++column;
    }
    out += word;
    column += columns;
    is_line_start = false;
    at = end;
  }
  return out;
}

size_t TextColumns(std::string_view text) {
  size_t columns = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033') {
      size_t end = text.find('m', i);
      if (end == std::string_view::npos) break;
      i = end;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) ++columns;  // Not a continuation byte.
  }
  return columns;
}

}  // namespace tarmac
