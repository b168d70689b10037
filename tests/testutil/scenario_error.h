// SPDX-License-Identifier: Apache-2.0
//
// The message a scenario that must be refused gets, for tests of the
// scenario parser: it fails the test when the text parses, or when the
// refusal is not an invalid-argument one.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "sim/scenario_parser.h"

namespace tarmac::testing {

inline std::string ScenarioErrorOf(std::string_view text) {
  Result<sim::Scenario> s = sim::ParseScenario(text, "lab.toml");
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  return s.status().message();
}

}  // namespace tarmac::testing
