// SPDX-License-Identifier: Apache-2.0
//
// Plain-text tables for the listing commands (leases, queue, events): each
// column as wide as its widest cell, two spaces between columns, so no
// value runs into the next. The last column is never padded.
#pragma once

#include <string>
#include <vector>

namespace tarmac::cli {

struct Column {
  std::string header;
  bool is_right_aligned = false;
};

// `rows` hold one cell per column; each cell is shown through ForTerminal
// (common/terminal_text.h), so a cell may hold any foreign bytes. With `max_width`, a last column that
// would run past it is wrapped onto lines of its own, under its heading.
std::string RenderTable(const std::vector<Column>& columns, const std::vector<std::vector<std::string>>& rows,
                        size_t max_width = 0);

}  // namespace tarmac::cli
