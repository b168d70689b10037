// SPDX-License-Identifier: Apache-2.0
//
// Who a caller of the local API is, from what the kernel vouches for
// (SO_PEERCRED: uid and primary gid): the user name, and whether they may
// manage everyone's leases and processes (root, or a member of the admin
// group, primary or supplementary, as the group database says now).
// Thread-safe (reentrant lookups).
#pragma once

#include <sys/types.h>

#include <string>

#include "sched/lease_book.h"

namespace tarmac::leases {

sched::Caller ResolveCaller(uid_t uid, gid_t gid, const std::string& admin_group);

// The login name of `uid`, or the uid as text when it has none.
std::string UserName(int64_t uid);

// The agent acting on its own policy (may end any lease).
inline const sched::Caller kAgentCaller{0, "tarmac", true};

}  // namespace tarmac::leases
