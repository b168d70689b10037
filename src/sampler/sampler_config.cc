// SPDX-License-Identifier: Apache-2.0
#include "sampler/sampler_config.h"

namespace tarmac::sampler {

void ReadSamplerSection(ConfigSection& section, SamplerOptions* out) {
  using std::chrono::milliseconds;
  section.Interval("fast_interval", milliseconds(100), milliseconds(60000), &out->fast_interval);
  section.Interval("slow_interval", milliseconds(1000), milliseconds(3600000), &out->slow_interval);
  section.Interval("call_timeout", milliseconds(100), milliseconds(60000), &out->call_timeout);
  section.Interval("reattach_interval", milliseconds(100), milliseconds(3600000), &out->reattach_interval);
  if (out->slow_interval < out->fast_interval) {
    section.Fail("slow_interval", "must not be shorter than fast_interval");
  }
}

}  // namespace tarmac::sampler
