// SPDX-License-Identifier: Apache-2.0
#include "common/random_id.h"

#include <fmt/format.h>

#include <random>

namespace tarmac {

std::string RandomHex128() {
  std::random_device random;
  std::string hex;
  for (int i = 0; i < 4; ++i) hex += fmt::format("{:08x}", random());
  return hex;
}

}  // namespace tarmac
