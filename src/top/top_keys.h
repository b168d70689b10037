// SPDX-License-Identifier: Apache-2.0
//
// What a key or a click does to `tarmac top`'s UI state, and what the
// driver must then do (quit, signal a process, read a process's
// environment). Key codes are the driver's mapping of the terminal's:
// printable characters as themselves, the rest as kKey*. Pure.
#pragma once

#include <cstdint>

#include "top/top_model.h"
#include "top/top_view.h"

namespace tarmac::top {

inline constexpr int kKeyEscape = 27;
inline constexpr int kKeyEnter = '\n';
inline constexpr int kKeyUp = 0x10001;
inline constexpr int kKeyDown = 0x10002;
inline constexpr int kKeyPageUp = 0x10003;
inline constexpr int kKeyPageDown = 0x10004;
inline constexpr int kKeyHome = 0x10005;
inline constexpr int kKeyEnd = 0x10006;
inline constexpr int kKeyBackspace = 0x10007;

enum class TopAction { kNone, kQuit, kSignal, kReadDetails };

struct KeyOutcome {
  TopAction action = TopAction::kNone;
  int64_t pid = 0;
  int signal = 0;
};

KeyOutcome HandleKey(int key, const TopData& data, const Layout& layout, TopUi* ui);

// A click at (row, col): a column's title sorts by it (again: the other
// way), a process row selects it.
void HandleClick(int row, int col, const Layout& layout, TopUi* ui);

}  // namespace tarmac::top
