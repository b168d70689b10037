// SPDX-License-Identifier: Apache-2.0
#include "common/terminal.h"

#include <sys/ioctl.h>

#include <algorithm>

namespace tarmac {

int TerminalColumns(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  return 100;
}

int TerminalRows(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 2) return ws.ws_row;
  return 0;
}

void LiveText::Erase() {
  if (lines_ > 1) std::fprintf(out_, "\033[%dA", lines_ - 1);
  if (lines_ > 0) std::fputs("\r\033[J", out_);
}

void LiveText::Show(const std::string& text) {
  if (lines_ > 0 && text == shown_) return;
  Erase();
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  shown_ = text;
  lines_ = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

void LiveText::Clear() {
  Erase();
  std::fflush(out_);
  shown_.clear();
  lines_ = 0;
}

}  // namespace tarmac
