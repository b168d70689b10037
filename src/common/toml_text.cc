// SPDX-License-Identifier: Apache-2.0
#include "common/toml_text.h"

#include <fmt/format.h>

#include <vector>

namespace tarmac {
namespace {

// Skips the multi-line string opened at `*i` (its three quotes there),
// counting lines; false when a non-ASCII character follows a line-ending
// backslash (toml++ tests what follows for whitespace).
bool SkipMultiLineString(std::string_view text, size_t* at, int* lines) {
  size_t& i = *at;
  int& line = *lines;
  auto starts = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
  std::string_view close = text.substr(i, 3);
  bool has_escapes = close[0] == '"';
  i += 3;
  while (i < text.size() && !starts(close)) {
    if (has_escapes && text[i] == '\\') {
      size_t j = i + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r')) j++;
      if (j < text.size() && text[j] == '\n') {
        // A line-ending backslash: toml++ tests what follows for
        // whitespace, so that must not be non-ASCII either.
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) {
          if (text[j] == '\n') line++;
          j++;
        }
        if (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x80) {
          return false;
        }
        i = j;
        continue;
      }
      i += 2;
      continue;
    }
    if (text[i] == '\n') line++;
    i++;
  }
  i += 3;
  while (i < text.size() && text[i] == close[0]) i++;  // Up to two quotes may end the content.
  return true;
}

// What punctuation outside strings does to where values and keys are:
// arrays and inline tables opened and closed, '=' and ',' expecting a value.
void NoteStructure(char c, char before, std::vector<char>* opened, bool* expects_value) {
  std::vector<char>& open = *opened;
  bool& expect_value = *expects_value;
  auto in = [&](char kind) { return !open.empty() && open.back() == kind; };
  if (c == '=') expect_value = true;
  if (c == '[') {
    if (expect_value && (before == '=' || before == '[' || before == ',' || (before == '\n' && in('a')))) {
      open.push_back('a');
    } else {
      expect_value = false;  // A table header: keys.
    }
  }
  if (c == ']' && in('a')) {
    open.pop_back();
    expect_value = false;
  }
  if (c == '{' && expect_value) {
    open.push_back('t');
    expect_value = false;
  }
  if (c == '}' && in('t')) {
    open.pop_back();
    expect_value = false;
  }
  if (c == ',') expect_value = in('a');
}

}  // namespace

Status CheckTomlText(std::string_view text, std::string_view source) {
  int line = 1;
  size_t i = 0;
  // Where a quote opens a string, as TOML (and toml++) reads it:
  //   a value: after '=', or in an array after '[', ',' or a line break;
  //     basic, literal, and multi-line strings;
  //   a key: first on a line outside arrays, in an inline table after '{'
  //     or ',', after '.' in a dotted key, after '[' in a table header;
  //     one-line strings only ('"""' there is an empty key, then a quote).
  // Anywhere else a quote opens nothing, and what follows is checked.
  std::vector<char> open;     // 'a' array, 't' inline table.
  bool expect_value = false;  // The next token is a value, not a key.
  char last = '\n';           // The last character that was not a space or tab.
  auto starts = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
  auto in = [&](char kind) { return !open.empty() && open.back() == kind; };
  auto fail = [&](std::string_view where) {
    return Status::InvalidArgument(fmt::format("{}:{}: non-ASCII character {}", source, line, where));
  };
  // Skips a one-line string opened by `quote` at i.
  auto skip_string = [&](char quote) {
    i++;
    while (i < text.size() && text[i] != quote && text[i] != '\n') {
      i += (quote == '"' && text[i] == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ? 2 : 1;
    }
    if (i < text.size() && text[i] == quote) i++;
  };
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      i++;
      continue;
    }
    if (c == '\n') {
      line++;
      i++;
      last = '\n';
      if (open.empty()) expect_value = false;
      continue;
    }
    bool is_quote = c == '"' || c == '\'';
    bool value_here =
        expect_value && (last == '=' || last == '[' || last == ',' || (last == '\n' && in('a')));
    bool key_here =
        !expect_value && (last == '\n' || last == '{' || last == ',' || last == '.' || last == '[');
    char before = last;
    last = c;
    if (c == '#') {  // Comment: to the end of the line.
      while (i < text.size() && text[i] != '\n') i++;
    } else if (is_quote && value_here && (starts("\"\"\"") || starts("'''"))) {  // Multi-line string.
      if (!SkipMultiLineString(text, &i, &line)) return fail("right after a line-ending backslash");
      expect_value = false;
    } else if (is_quote && (value_here || key_here)) {
      skip_string(c);
      if (value_here) expect_value = false;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return fail("outside a string or comment");
    } else {
      NoteStructure(c, before, &open, &expect_value);
      i++;
    }
  }
  return Status::OK();
}

}  // namespace tarmac
