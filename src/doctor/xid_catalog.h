// SPDX-License-Identifier: Apache-2.0
//
// What the common Xid codes mean and what to do about each, after NVIDIA's
// Xid catalog and field practice. Pure; thread-safe.
#pragma once

#include <cstdint>

#include "doctor/finding.h"

namespace tarmac::doctor {

struct XidMeaning {
  int64_t xid = 0;
  Severity severity = Severity::kWarning;
  const char* name = "";     // "GPU has fallen off the bus"
  const char* meaning = "";  // What usually causes it.
  const char* action = "";   // What to do next.
};

// The entry for `xid`; a generic one (warning) for codes not in the table.
XidMeaning LookUpXid(int64_t xid);

// Whether `xid` has its own entry.
bool IsKnownXid(int64_t xid);

}  // namespace tarmac::doctor
