// SPDX-License-Identifier: Apache-2.0
//
// One response line of the local API (ipc/protocol.h), parsed, for tests:
// it must be whole (end in a newline) and valid JSON.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace tarmac::testing {

inline nlohmann::json ParseResponseLine(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  return nlohmann::json::parse(line);
}

}  // namespace tarmac::testing
