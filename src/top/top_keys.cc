// SPDX-License-Identifier: Apache-2.0
#include "top/top_keys.h"

#include <algorithm>
#include <csignal>

#include "top/process_table.h"

namespace tarmac::top {
namespace {

void Select(const std::vector<ProcessRow>& rows, int index, TopUi* ui) {
  if (rows.empty()) return;
  index = std::clamp(index, 0, static_cast<int>(rows.size()) - 1);
  ui->selected_pid = rows[static_cast<size_t>(index)].process->pid;
}

}  // namespace

KeyOutcome HandleKey(int key, const TopData& data, const Layout& layout, TopUi* ui) {
  std::vector<ProcessRow> rows = VisibleProcesses(data.processes, *ui);
  int current = RowOf(rows, ui->selected_pid);
  if (ui->overlay == Overlay::kConfirm) {
    ui->overlay = Overlay::kNone;
    if ((key == 'y' || key == 'Y') && current >= 0) {
      return {TopAction::kSignal, rows[static_cast<size_t>(current)].process->pid, ui->confirm_signal};
    }
    ui->message = "cancelled";
    return {};
  }
  if (ui->is_editing_filter) {
    if (key == kKeyEnter || key == '\r') {
      ui->is_editing_filter = false;
    } else if (key == kKeyEscape) {
      ui->is_editing_filter = false;
      ui->filter.clear();
    } else if (key == kKeyBackspace || key == 127 || key == 8) {
      if (!ui->filter.empty()) ui->filter.pop_back();
    } else if (key >= 0x20 && key < 0x7f && ui->filter.size() < 64) {
      ui->filter += static_cast<char>(key);
    }
    ui->scroll = 0;
    return {};
  }
  if (ui->overlay != Overlay::kNone) {
    // Any key closes help and details; q still quits.
    ui->overlay = Overlay::kNone;
    if (key == 'q') return {TopAction::kQuit};
    return {};
  }
  ui->message.clear();
  int page = std::max(1, layout.process_rows - 1);
  if (key == 'q' || key == 3) return {TopAction::kQuit};  // 3: Ctrl-C, when the terminal hands it over.
  switch (key) {
    case kKeyUp:
      Select(rows, current - 1, ui);
      break;
    case 'j':
    case kKeyDown:
      Select(rows, current + 1, ui);
      break;
    case kKeyPageUp:
      Select(rows, current - page, ui);
      break;
    case kKeyPageDown:
      Select(rows, current + page, ui);
      break;
    case kKeyHome:
    case 'g':
      Select(rows, 0, ui);
      break;
    case kKeyEnd:
    case 'G':
      Select(rows, static_cast<int>(rows.size()) - 1, ui);
      break;
    case 's':
      ui->sort = NextSortKey(ui->sort);
      ui->is_descending = ui->sort != SortKey::kPid && ui->sort != SortKey::kUser &&
                          ui->sort != SortKey::kName && ui->sort != SortKey::kGpu;
      break;
    case 'r':
      ui->is_descending = !ui->is_descending;
      break;
    case 't':
      ui->is_tree = !ui->is_tree;
      break;
    case '/':
      ui->is_editing_filter = true;
      break;
    case kKeyEscape:
      ui->filter.clear();
      break;
    case '?':
    case 'h':
      ui->overlay = Overlay::kHelp;
      break;
    case 'e':
      if (current >= 0) {
        ui->selected_pid = rows[static_cast<size_t>(current)].process->pid;
        ui->overlay = Overlay::kDetails;
        return {TopAction::kReadDetails, ui->selected_pid, 0};
      }
      break;
    case 'k':
    case 'K':
      if (current < 0) {
        ui->message = "no process to signal";
        break;
      }
      ui->selected_pid = rows[static_cast<size_t>(current)].process->pid;
      ui->overlay = Overlay::kConfirm;
      ui->confirm_signal = key == 'K' ? SIGKILL : SIGTERM;
      break;
    default:
      break;
  }
  return {};
}

void HandleClick(int row, int col, const Layout& layout, TopUi* ui) {
  if (ui->overlay != Overlay::kNone || ui->is_editing_filter) return;
  if (row == layout.process_header_row) {
    const std::pair<int, SortKey>* hit = nullptr;
    for (const auto& c : layout.columns) {
      if (c.first <= col) hit = &c;
    }
    if (hit == nullptr) return;
    if (ui->sort == hit->second) {
      ui->is_descending = !ui->is_descending;
    } else {
      ui->sort = hit->second;
      ui->is_descending = true;
    }
    return;
  }
  int index = row - layout.process_first_row;
  if (index >= 0 && index < static_cast<int>(layout.shown_pids.size())) {
    ui->selected_pid = layout.shown_pids[static_cast<size_t>(index)];
  }
}

}  // namespace tarmac::top
