// SPDX-License-Identifier: Apache-2.0
//
// The one terminal filter: whatever bytes come in, what comes out holds no
// control (C0, DEL, C1 as a raw byte or as UTF-8), no bidi override and no
// invalid UTF-8; and the JSON depth check never crashes on any bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/terminal_text.h"
#include "http/bounded_fetch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const std::string& shown : {tarmac::ForTerminal(text), tarmac::ForTerminalLines(text)}) {
    for (size_t i = 0; i < shown.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(shown[i]);
      if ((c < 0x20 && c != '\n') || c == 0x7f) __builtin_trap();
    }
    // What is left is well-formed and free of what a terminal would obey.
    std::string without_breaks = shown;
    for (char& c : without_breaks) c = c == '\n' ? ' ' : c;
    if (!tarmac::IsTerminalSafe(without_breaks)) __builtin_trap();
  }
  if (tarmac::ForTerminal(text).find('\n') != std::string::npos) __builtin_trap();
  (void)tarmac::http::JsonDepthWithin(text, 64);
  return 0;
}
