// SPDX-License-Identifier: Apache-2.0
#include "cli/table.h"

#include <algorithm>

#include "common/terminal_text.h"
#include "common/text_wrap.h"

namespace tarmac::cli {

std::string RenderTable(const std::vector<Column>& columns,
                        const std::vector<std::vector<std::string>>& foreign_rows, size_t max_width) {
  // Every cell may hold a foreign string (a user, a command, an event's
  // detail): shown through the one terminal filter before it is measured.
  std::vector<std::vector<std::string>> rows;
  rows.reserve(foreign_rows.size());
  for (const std::vector<std::string>& row : foreign_rows) {
    std::vector<std::string>& shown = rows.emplace_back();
    for (const std::string& cell : row) shown.push_back(ForTerminal(cell));
  }
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) width[c] = TextColumns(columns[c].header);
  for (const std::vector<std::string>& row : rows) {
    for (size_t c = 0; c < columns.size() && c < row.size(); ++c)
      width[c] = std::max(width[c], TextColumns(row[c]));
  }
  size_t last_start = 0;
  for (size_t c = 0; c + 1 < columns.size(); ++c) last_start += width[c] + 2;
  // Too little room left for the last column: lines run on as they are.
  size_t wrap_at = max_width > last_start + 20 ? max_width : 0;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : std::string();
      bool is_last = c + 1 == columns.size();
      std::string pad(width[c] - std::min(width[c], TextColumns(cell)), ' ');
      if (c > 0) out += "  ";
      if (is_last && !columns[c].is_right_aligned) {
        out += WrapText(cell, wrap_at, last_start, last_start);
      } else {
        out += columns[c].is_right_aligned ? pad + cell : (is_last ? cell : cell + pad);
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> headers;
  for (const Column& c : columns) headers.push_back(c.header);
  std::string out = line(headers);
  for (const std::vector<std::string>& row : rows) out += line(row);
  return out;
}

}  // namespace tarmac::cli
