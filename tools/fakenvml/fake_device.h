// SPDX-License-Identifier: Apache-2.0
//
// What every section of the fake libnvidia-ml shares: the export macro, the
// process-wide state, and one device call's view of the simulated world
// (Dev), with the ABI's string convention. Internal to the fake.
#pragma once

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "fake_state.h"
#include "nvidia/mig_profiles.h"

#define NVML_EXPORT extern "C" __attribute__((visibility("default")))

// Exported by one section, called by another.
extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetPciInfo_v3(nvmlDevice_st* device,
                                                             tarmac::gpu::nvml::PciInfo* pci);

namespace tarmac::fakenvml {

using namespace tarmac::gpu::nvml;  // NOLINT: one ABI shim.

inline FakeState& Fake() { return FakeState::Get(); }

// One device call's view of the world.
struct Dev {
  Return r = kSuccess;
  int index = 0;
  std::shared_ptr<const sim::WorldState> state;
  const sim::GpuSpec* spec = nullptr;
  const sim::GpuState* g = nullptr;
};

// Resolves a GPU handle. A MIG device handle, which NVML lets a client
// use "with some restrictions" in place of its GPU's, answers NOT_SUPPORTED
// to a call that reads the whole GPU: the calls that answer per instance
// check for one first (README.md here lists them).
inline Dev Open(nvmlDevice_st* device) {
  Dev d;
  if (Fake().IsMigHandle(device)) {
    d.r = Fake().world() == nullptr ? kErrorUninitialized : kErrorNotSupported;
    return d;
  }
  d.r = Fake().Resolve(device, &d.index, &d.state);
  if (d.r != kSuccess) return d;
  sim::World* world = Fake().world();
  if (world == nullptr) {
    d.r = kErrorUninitialized;
    return d;
  }
  d.spec = &world->scenario().gpus[static_cast<size_t>(d.index)];
  d.g = &d.state->gpus[static_cast<size_t>(d.index)];
  return d;
}

// One call on a MIG device handle: its GPU's view and the instance.
struct MigDev {
  Dev d;
  const sim::MigInstanceState* m = nullptr;
};

inline MigDev OpenMig(nvmlDevice_st* device) {
  MigDev md;
  int slot = 0;
  md.d.r = Fake().ResolveMig(device, &md.d.index, &slot, &md.d.state);
  if (md.d.r != kSuccess) return md;
  sim::World* world = Fake().world();
  if (world == nullptr) {
    md.d.r = kErrorUninitialized;
    return md;
  }
  md.d.spec = &world->scenario().gpus[static_cast<size_t>(md.d.index)];
  md.d.g = &md.d.state->gpus[static_cast<size_t>(md.d.index)];
  md.m = &md.d.g->mig_instances[static_cast<size_t>(slot)];
  return md;
}

// The memory slices (of 8) of a MIG instance's profile; 1 when unknown.
inline int MigMemorySlices(const sim::GpuSpec& spec, const sim::MigInstanceState& m) {
  for (const nvidia::MigProfile& p : nvidia::MigProfilesFor(spec.model, spec.memory_total_bytes)) {
    if (p.name == m.spec->profile) return p.memory_slices;
  }
  return 1;
}

// Streaming multiprocessors of `compute_slices` of 7 (132 SMs on an H100,
// 98 on an A100 in MIG mode: 14 a slice).
inline unsigned MigSms(const sim::GpuSpec& spec, int compute_slices) {
  bool is_hopper =
      spec.model.find("H100") != std::string::npos || spec.model.find("H200") != std::string::npos;
  return static_cast<unsigned>(compute_slices * (is_hopper ? 16 : 14) +
                               (compute_slices == 7 && is_hopper ? 20 : 0));
}

inline Return CopyString(const std::string& value, char* out, unsigned length) {
  if (out == nullptr) return kErrorInvalidArgument;
  if (value.size() + 1 > length) return kErrorInsufficientSize;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return kSuccess;
}

inline bool Unsupported(const Dev& d, const char* field) { return !d.spec->Supports(field); }

// The usual call of one value: the handle checked, the pointer checked,
// then *out = value(the device's view).
template <typename T, typename F>
Return AnswerOne(nvmlDevice_st* device, T* out, F value) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (out == nullptr) return kErrorInvalidArgument;
  *out = static_cast<T>(value(d));
  return kSuccess;
}

// The video engine's clock follows the SM clock, at about 0.9 of it (an
// H100 SXM: 1755 MHz at its 1980 MHz SM maximum).
inline int VideoClockMhz(const sim::GpuSpec& spec, int sm_clock_mhz) {
  (void)spec;
  return sm_clock_mhz * 1755 / 1980;
}

inline unsigned long long Micros(std::chrono::system_clock::time_point t) {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
}

}  // namespace tarmac::fakenvml
