// SPDX-License-Identifier: Apache-2.0
// The lease book against its reference model (testutil/lease_model.h): random
// sequences of requests, grants, releases, cancels, extensions, clients
// dying and restarts, checked after every step. `make fuzz` runs far more
// (fuzz/lease_model_fuzzer.cc); TARMAC_MODEL_STEPS sets the count here.
#include "testutil/lease_model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace tarmac::sched {
namespace {

int Steps() {
  const char* env = std::getenv("TARMAC_MODEL_STEPS");
  return env != nullptr ? std::max(1, std::atoi(env)) : 5000;
}

TEST(LeaseModelTest, RandomSequencesAgreeWithTheModelAtEveryStep) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 random(seed);
    auto next = [&random](uint32_t bound) { return static_cast<uint32_t>(random() % bound); };
    EXPECT_EQ(model::RunLeaseModel(next, Steps()), "") << "seed " << seed;
  }
}

}  // namespace
}  // namespace tarmac::sched
