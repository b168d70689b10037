// SPDX-License-Identifier: Apache-2.0
//
// The one way a foreign string (a process's argv or name, a user, container,
// pod or Slurm name, a lease's command, a batch's name, a Prometheus label,
// an engine's error) reaches a terminal or a log line. Such a string can
// hold any byte; printed raw, ESC ] 0 ; title BEL sets root's terminal
// title, OSC 52 writes its clipboard and ESC [ 2J clears its screen. Here,
// as OpenSSH's strnvis(VIS_SAFE | VIS_OCTAL) and `less -R` do, every
// control is made visible and never emitted:
//
//   C0 controls and DEL      \e for ESC, \n \r \t \a \b \f \v, \0, else \xNN
//   C1 controls (U+0080-9F)  \u009b
//   bidi and invisible marks \u202e (U+061C, U+200B-200F, U+2028-202E,
//                            U+2060-2069, U+FEFF)
//   invalid UTF-8            \xNN for each byte that is not part of a
//                            well-formed character
//   backslash                \\ (so "\e" in the output always means ESC)
//
// Everything else (printable ASCII, well-formed UTF-8) passes unchanged.
// `--json` output does not come here: JSON escapes its own controls and keeps
// the exact value. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace tarmac {

// `foreign` with every control, bidi mark and bad byte made visible: the
// result holds no byte below 0x20, no DEL, no C1 and no bidi control.
std::string ForTerminal(std::string_view foreign);

// As ForTerminal, but line breaks stay line breaks: for a whole text a view
// drew (with no escape sequences of its own) from foreign strings.
std::string ForTerminalLines(std::string_view text);

// True when `text` holds nothing ForTerminal would make visible but
// backslashes: no control, C1, bidi mark or bad UTF-8.
bool IsTerminalSafe(std::string_view text);

}  // namespace tarmac
