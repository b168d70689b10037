// SPDX-License-Identifier: Apache-2.0
//
// Every kind of lease event the agent records (store::LeaseEvent::kind),
// named once: `tarmac events --kind` takes only these, and docs/protocol.md
// lists the same (a test compares the two, and checks the kinds the code
// records by name against this list). Constant data.
#pragma once

#include <string>
#include <vector>

namespace tarmac::store {

// In the order docs/protocol.md gives them.
const std::vector<std::string>& LeaseEventKinds();

}  // namespace tarmac::store
