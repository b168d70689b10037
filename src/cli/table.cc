// SPDX-License-Identifier: Apache-2.0
#include "cli/table.h"

#include <algorithm>

#include "common/text_wrap.h"

namespace tarmac::cli {

std::string RenderTable(const std::vector<Column>& columns, const std::vector<std::vector<std::string>>& rows,
                        size_t max_width) {
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].header.size();
  for (const std::vector<std::string>& row : rows) {
    for (size_t c = 0; c < columns.size() && c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
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
      std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
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
