// SPDX-License-Identifier: Apache-2.0
//
// The web console's page (src/agent/console.html), built into the agent:
// CMake writes it into a generated source file, so the agent serves it
// without reading a file at run time.
#pragma once

#include <string_view>

namespace tarmac::agent {

std::string_view ConsolePage();

}  // namespace tarmac::agent
