// SPDX-License-Identifier: Apache-2.0
//
// Prose fitted to a terminal's width: words carried to the next line, each
// continuation line indented. Pure.
#pragma once

#include <string>
#include <string_view>

namespace tarmac {

// `text` (which may hold its own line breaks) in lines of at most `width`
// columns, the first starting at column `first_column` (what is printed
// before it on that line) and every later one indented by `indent`
// spaces (a blank line stays empty). A word longer than a whole line is
// cut after its last comma that fits (a list of UUIDs breaks between
// them), else at the line's end; runs of spaces become one. No trailing newline. `width` 0: no
// limit (only `text`'s own line breaks).
std::string WrapText(std::string_view text, size_t width, size_t first_column, size_t indent);

// Columns `text` takes on a terminal: a UTF-8 character takes one, an ANSI
// colour code ("\033[...m") none.
size_t TextColumns(std::string_view text);

}  // namespace tarmac
