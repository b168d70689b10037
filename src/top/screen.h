// SPDX-License-Identifier: Apache-2.0
//
// A virtual terminal: a grid of cells, each one column wide, with a glyph
// (one UTF-8 character) and a style. `tarmac top` draws its whole screen
// into one (a pure function of the data and the UI's state, top_view.h),
// then the terminal driver copies it to ncurses; tests read it as text.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tarmac::top {

// Colours that read on dark and light backgrounds alike (no white, no
// black: the terminal's own foreground and background stay).
enum class Color : uint8_t { kDefault, kGreen, kYellow, kRed, kBlue, kMagenta, kCyan };

struct Style {
  Color color = Color::kDefault;
  bool bold = false;
  bool reverse = false;
  bool dim = false;
  bool operator==(const Style&) const = default;
};

struct Cell {
  std::string glyph = " ";
  Style style;
};

class Screen {
 public:
  Screen(int width, int height);
  int width() const { return width_; }
  int height() const { return height_; }

  // Writes `text` from column `col` of `row`, one column per character,
  // cut at the right edge (and nothing outside the grid). Returns the
  // column after the last one written.
  int Put(int row, int col, std::string_view text, Style style = {});
  // `count` copies of `glyph` from `col`.
  void Fill(int row, int col, int count, std::string_view glyph, Style style = {});
  // Gives `style` to the cells of `row` from `col`, `count` wide (a
  // selected row's reverse video).
  void Restyle(int row, int col, int count, Style style);
  const Cell& At(int row, int col) const { return cells_[static_cast<size_t>(row * width_ + col)]; }

  // Row `row`'s glyphs, trailing blanks cut.
  std::string Line(int row) const;
  // Every line, joined by '\n'.
  std::string Text() const;

 private:
  int width_;
  int height_;
  std::vector<Cell> cells_;
};

// The number of characters (columns) of UTF-8 `text`.
int Columns(std::string_view text);
// `text` cut to `columns` characters, "…" in the last when cut.
std::string Fit(std::string_view text, int columns);

}  // namespace tarmac::top
