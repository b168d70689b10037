// SPDX-License-Identifier: Apache-2.0
//
// How the Sampler reads the GPUs; the defaults are the agent's ([sampler]
// in docs/config.md, read by sampler_config.h).
#pragma once

#include <chrono>
#include <string>

namespace tarmac::sampler {

struct SamplerOptions {
  std::chrono::milliseconds fast_interval{1000};   // Utilization, memory, power, processes.
  std::chrono::milliseconds slow_interval{30000};  // ECC, PCIe, NVLink, fans.
  // A GPU read longer than this marks the GPU unresponsive (0: unbounded).
  std::chrono::milliseconds call_timeout{2000};
  // How often a detached sampler tries to open the backend again.
  std::chrono::milliseconds reattach_interval{5000};
  // The node's name every reading carries (status, the console, /metrics):
  // the agent's [http] hostname or NODE_NAME; empty: this host's name. Not
  // a [sampler] key.
  std::string hostname;

  bool operator==(const SamplerOptions&) const = default;
};

}  // namespace tarmac::sampler
