// SPDX-License-Identifier: Apache-2.0
//
// [sampler] of the agent's config: how often each tier is read and how long
// a read may take. Keys (defaults in SamplerOptions): fast_interval (100ms
// to 60s), slow_interval (1s to 1h, not shorter than fast_interval),
// call_timeout (100ms to 60s), reattach_interval (100ms to 1h).
#pragma once

#include "common/config_section.h"
#include "sampler/sampler_options.h"

namespace tarmac::sampler {

void ReadSamplerSection(ConfigSection& section, SamplerOptions* out);

}  // namespace tarmac::sampler
