// SPDX-License-Identifier: Apache-2.0
//
// The machine's host name, as reports and labels show it.
#pragma once

#include <string>

namespace tarmac {

// gethostname(2); "localhost" when it fails.
std::string HostName();

}  // namespace tarmac
