// SPDX-License-Identifier: Apache-2.0
//
// What `tarmac top` reads from others: any status JSON (an agent's, any
// shape) gives a screen, never a crash, with no control character on it
// and nothing past its edge; any /proc/PID/stat text parses or is refused.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "node/node_json.h"
#include "top/top_keys.h"
#include "top/top_view.h"
#include "top_cli/top_feed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::top::ProcSample sample;
  (void)tarmac::top::ParseProcStat(text, &sample);
  nlohmann::json status = nlohmann::json::parse(text, nullptr, false);
  if (status.is_discarded() || !status.is_object()) return 0;
  tarmac::top::TopData d;
  d.has_data = true;
  // The feed decodes an agent's status as `tarmac status` does; an answer
  // it refuses never reaches the screen.
  tarmac::Result<tarmac::node::NodeView> node = tarmac::node::NodeFromJson(status);
  if (!node.ok()) return 0;
  try {
    d.status = std::move(node).value();
    d.processes = tarmac::top::ProcessesFromStatus(d.status);
    tarmac::top::TopUi ui;
    for (int width : {80, 200}) {
      tarmac::top::Screen screen(width, width == 80 ? 24 : 50);
      tarmac::top::Layout layout = tarmac::top::RenderTop(d, ui, &screen);
      for (int r = 0; r < screen.height(); ++r) {
        for (int c = 0; c < screen.width(); ++c) {
          const std::string& g = screen.At(r, c).glyph;
          if (g.size() == 1 && (static_cast<unsigned char>(g[0]) < 0x20 || g[0] == 0x7f)) __builtin_trap();
        }
      }
      tarmac::top::HandleKey('t', d, layout, &ui);
      tarmac::top::HandleKey(tarmac::top::kKeyEnd, d, layout, &ui);
    }
  } catch (const nlohmann::json::exception&) {
    // A field of the wrong type: the feed would not have taken this answer.
  }
  return 0;
}
