// SPDX-License-Identifier: Apache-2.0
//
// The web console's assets (src/agent/console.{html,js,css}), built into
// the agent: CMake writes them into a generated source file, so the agent
// serves them without reading a file at run time, air-gapped.
#pragma once

#include <string_view>

namespace tarmac::web {

std::string_view ConsolePage();    // /
std::string_view ConsoleScript();  // /console.js
std::string_view ConsoleStyle();   // /console.css

}  // namespace tarmac::web
