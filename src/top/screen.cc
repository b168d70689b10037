// SPDX-License-Identifier: Apache-2.0
#include "top/screen.h"

#include <algorithm>

#include "common/terminal_text.h"

namespace tarmac::top {
namespace {

// The length of the UTF-8 character starting with byte `lead` (1 for a
// stray continuation byte, so a broken text still advances).
size_t CharLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xe) return 3;
  if ((lead >> 3) == 0x1e) return 4;
  return 1;
}

}  // namespace

Screen::Screen(int width, int height)
    : width_(std::max(0, width)),
      height_(std::max(0, height)),
      cells_(static_cast<size_t>(width_ * height_)) {}

int Screen::Put(int row, int col, std::string_view text, Style style) {
  size_t i = 0;
  while (i < text.size()) {
    size_t n = std::min(CharLength(static_cast<unsigned char>(text[i])), text.size() - i);
    if (row >= 0 && row < height_ && col >= 0 && col < width_) {
      Cell& cell = cells_[static_cast<size_t>(row * width_ + col)];
      // Control characters, C1 and bidi marks and bad UTF-8 (a process
      // name can hold any byte) are shown as '?', never sent to the
      // terminal (common/terminal_text.h says which).
      std::string_view glyph = text.substr(i, n);
      cell.glyph = IsTerminalSafe(glyph) ? std::string(glyph) : "?";
      cell.style = style;
    }
    i += n;
    ++col;
  }
  return col;
}

void Screen::Fill(int row, int col, int count, std::string_view glyph, Style style) {
  for (int i = 0; i < count; ++i) Put(row, col + i, glyph, style);
}

void Screen::Restyle(int row, int col, int count, Style style) {
  if (row < 0 || row >= height_) return;
  for (int c = std::max(0, col); c < std::min(width_, col + count); ++c) {
    cells_[static_cast<size_t>(row * width_ + c)].style = style;
  }
}

std::string Screen::Line(int row) const {
  std::string out;
  for (int c = 0; c < width_; ++c) out += At(row, c).glyph;
  size_t end = out.find_last_not_of(' ');
  return end == std::string::npos ? "" : out.substr(0, end + 1);
}

std::string Screen::Text() const {
  std::string out;
  for (int r = 0; r < height_; ++r) out += Line(r) + (r + 1 < height_ ? "\n" : "");
  return out;
}

int Columns(std::string_view text) {
  int n = 0;
  for (size_t i = 0; i < text.size(); i += CharLength(static_cast<unsigned char>(text[i]))) ++n;
  return n;
}

std::string Fit(std::string_view text, int columns) {
  if (columns <= 0) return "";
  if (Columns(text) <= columns) return std::string(text);
  std::string out;
  int n = 0;
  for (size_t i = 0; i < text.size() && n < columns - 1; ++n) {
    size_t len = std::min(CharLength(static_cast<unsigned char>(text[i])), text.size() - i);
    out += text.substr(i, len);
    i += len;
  }
  return out + "…";
}

}  // namespace tarmac::top
