// SPDX-License-Identifier: Apache-2.0
#include "common/host_name.h"

#include <unistd.h>

namespace tarmac {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace tarmac
