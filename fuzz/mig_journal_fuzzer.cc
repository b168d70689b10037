// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the simulated world's MIG layout journal. Any input
// must parse into layouts of the scenario's GPUs or give one error naming
// the journal and line; never crash.
#include <cstdint>
#include <string_view>

#include "sim/mig_journal.h"
#include "sim/scenario_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tarmac::sim::Scenario kScenario = [] {
    tarmac::Result<tarmac::sim::Scenario> s = tarmac::sim::ParseScenario(
        "[[gpu]]\ncount = 2\nmodel = \"NVIDIA H100 80GB HBM3\"\nmig_layout = [\"3g.40gb\"]\n", "lab.toml");
    if (!s.ok()) __builtin_trap();
    return s.value();
  }();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tarmac::Result<std::vector<tarmac::sim::Fault>> faults =
      tarmac::sim::ParseMigLayouts(text, "mig-layouts", kScenario);
  if (!faults.ok() && faults.status().message().rfind("mig-layouts:", 0) != 0) __builtin_trap();
  if (faults.ok()) {
    for (const tarmac::sim::Fault& f : faults.value()) {
      if (f.gpu < 0 || f.gpu > 1) __builtin_trap();
    }
  }
  return 0;
}
