// SPDX-License-Identifier: Apache-2.0
//
// The process panel's rows: the processes that match the filter, sorted
// by the chosen column, or as a tree (each process under its parent when
// the parent is a GPU process too). Pure.
#pragma once

#include <vector>

#include "top/top_model.h"

namespace tarmac::top {

struct ProcessRow {
  const TopProcess* process = nullptr;
  int depth = 0;  // Tree view: how deep under a shown parent.
};

// Whether `p` matches `filter`: a part of its name, command, user, holder
// or PID, in any case. An empty filter matches everything.
bool MatchesFilter(const TopProcess& p, const std::string& filter);

std::vector<ProcessRow> VisibleProcesses(const std::vector<TopProcess>& processes, const TopUi& ui);

// The row of `pid` in `rows`; the first row (0) when absent; -1 when
// there are no rows.
int RowOf(const std::vector<ProcessRow>& rows, int64_t pid);

}  // namespace tarmac::top
