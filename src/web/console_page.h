// SPDX-License-Identifier: Apache-2.0
//
// The web console's assets (src/web/console.{html,css} and the script's ES
// modules in src/web/console/), built into the agent: CMake writes them
// into a generated source file, so the agent serves them without reading a
// file at run time, air-gapped. The modules are served as they are written
// (no bundler): the page loads console/main.js, which imports the others.
#pragma once

#include <span>
#include <string_view>

namespace tarmac::web {

struct ConsoleModule {
  std::string_view name;  // "main.js": served at /console/main.js.
  std::string_view text;
};

std::string_view ConsolePage();   // /
std::string_view ConsoleStyle();  // /console.css
// Every module, by name.
std::span<const ConsoleModule> ConsoleModules();

}  // namespace tarmac::web
