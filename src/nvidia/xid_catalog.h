// SPDX-License-Identifier: Apache-2.0
//
// What the common Xid codes mean and what to do about each, after NVIDIA's
// Xid catalog and field practice: an NVIDIA fact, read by the doctor (its
// findings) and the metrics (dcgm-exporter's err_msg). Pure; thread-safe.
#pragma once

#include <cstdint>

namespace tarmac::nvidia {

// How grave an Xid is: kInfo worth knowing, kWarning slower or about to
// break, kCritical broken or losing work.
enum class XidGravity { kInfo, kWarning, kCritical };

struct XidMeaning {
  int64_t xid = 0;
  XidGravity gravity = XidGravity::kWarning;
  const char* name = "";     // "GPU has fallen off the bus"
  const char* meaning = "";  // What usually causes it.
  const char* action = "";   // What to do next.
};

// The entry for `xid`; a generic one (warning) for codes not in the table.
XidMeaning LookUpXid(int64_t xid);

// Whether `xid` has its own entry.
bool IsKnownXid(int64_t xid);

// Whether `xid` is one of the application errors after which the GPU
// stays usable (13 graphics engine exception, 31 memory page fault, 43
// stopped processing, 45 preemptive cleanup, 68 video processor
// exception): NVIDIA's Kubernetes device plugin (health.go) keeps the
// device healthy on these and marks it unhealthy on every other Xid.
bool IsApplicationXid(int64_t xid);

}  // namespace tarmac::nvidia
