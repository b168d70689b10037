// SPDX-License-Identifier: Apache-2.0
//
// The terminal a command writes to: its width, and a block of lines that is
// drawn again in place (a waiting request's live status).
#pragma once

#include <cstdio>
#include <string>

namespace tarmac {

// Columns of the terminal on `fd`; 100 when `fd` is not a terminal (a log,
// a pipe), which every line tarmac prints fits.
int TerminalColumns(int fd);

// Rows of the terminal on `fd`; 0 when `fd` is not a terminal (no limit).
int TerminalRows(int fd);

// Text shown on a terminal and replaced by the next text shown: the lines
// the last one took are cleared first (cursor up, clear to the end of the
// screen), so a text that wraps over several lines is redrawn whole.
class LiveText {
 public:
  explicit LiveText(std::FILE* out) : out_(out) {}
  // Draws `text` (lines separated by '\n', no trailing newline) in place of
  // the last; nothing when it is the same.
  void Show(const std::string& text);
  // Clears what was shown; the cursor is left at the start of its line.
  void Clear();
  bool is_shown() const { return lines_ > 0; }

 private:
  void Erase();
  std::FILE* out_;
  std::string shown_;
  int lines_ = 0;
};

}  // namespace tarmac
