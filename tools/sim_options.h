// SPDX-License-Identifier: Apache-2.0
//
// The options every stand-in process (tarmac-simload, tarmac-simengine)
// takes alike: the world it runs in, and the command line it shows.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "sim/world.h"

namespace tarmac::sim {

// --scenario and --sim-dir (or their variables) into `world`; --title into
// `title`, with `example` as its example.
inline void AddStandInOptions(CLI::App* app, WorldOptions* world, std::string* title,
                              const std::string& example) {
  app->add_option("--scenario", world->scenario_path, "Scenario file")->envname("TARMAC_SIM_SCENARIO");
  app->add_option("--sim-dir", world->dir, "World directory")->envname("TARMAC_SIM_DIR");
  app->add_option("--title", *title,
                  "The command line to show in /proc (and so in tarmac), e.g. \"" + example + "\"");
}

}  // namespace tarmac::sim
