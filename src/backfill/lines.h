// SPDX-License-Identifier: Apache-2.0
//
// The lines of a text (a JSONL file, an NDJSON or event stream), each
// without its '\n' or a '\r' before it, numbered from 1. A last line without
// '\n' is a line too.
#pragma once

#include <cstdint>
#include <string_view>

namespace tarmac::backfill {

class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}

  // The next line; false after the last.
  bool Next(std::string_view* line) {
    if (at_ >= text_.size()) return false;
    size_t end = text_.find('\n', at_);
    if (end == std::string_view::npos) end = text_.size();
    *line = text_.substr(at_, end - at_);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    at_ = end + 1;
    ++number_;
    return true;
  }
  int64_t number() const { return number_; }  // Of the line Next gave last.

 private:
  std::string_view text_;
  size_t at_ = 0;
  int64_t number_ = 0;
};

// Whether `line` holds nothing but spaces and tabs.
inline bool IsBlank(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; }

}  // namespace tarmac::backfill
