// SPDX-License-Identifier: Apache-2.0
//
// Small helpers shared by the lease service's two halves: the API
// (lease_service.cc) and what it enforces each tick (lease_enforcement.cc).
#pragma once

#include <fmt/format.h>

#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "sampler/fleet_reader.h"
#include "sched/lease_book.h"

namespace tarmac::agent::lease_helpers {

// Recently ended leases remembered for lease.get and lease.release.
inline constexpr size_t kMaxEndedRemembered = 4096;
// The agent acting on its own policy (may end any lease).
inline const sched::Caller kAgentCaller{0, "tarmac", true};

inline std::string GpuList(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

// 128 random bits as hex.
inline std::string NewToken() {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", random());
  return token;
}

// "2026-11-30T16:04:05Z"
inline std::string UtcText(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

inline bool IsCompute(const sampler::ProcessView& p) { return p.process.type != gpu::ProcessType::kGraphics; }

}  // namespace tarmac::agent::lease_helpers
