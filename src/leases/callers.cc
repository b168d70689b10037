// SPDX-License-Identifier: Apache-2.0
#include "leases/callers.h"

#include <grp.h>
#include <pwd.h>

#include <vector>

namespace tarmac::leases {

std::string UserName(int64_t uid) {
  if (uid < 0) return "?";
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return std::to_string(uid);
}

sched::Caller ResolveCaller(uid_t uid, gid_t gid, const std::string& admin_group) {
  sched::Caller c;
  c.uid = uid;
  c.user = UserName(uid);
  c.is_admin = uid == 0;
  if (c.is_admin || admin_group.empty()) return c;
  std::vector<char> buf(65536);
  group gr{};
  group* found = nullptr;
  if (getgrnam_r(admin_group.c_str(), &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr) return c;
  if (found->gr_gid == gid) {
    c.is_admin = true;
    return c;
  }
  for (char** m = found->gr_mem; m != nullptr && *m != nullptr; ++m) {
    if (c.user == *m) {
      c.is_admin = true;
      break;
    }
  }
  return c;
}

}  // namespace tarmac::leases
