// SPDX-License-Identifier: Apache-2.0
#include "fake_state.h"

#include <cstdio>

namespace tarmac::fakenvml {

FakeState& FakeState::Get() {
  static FakeState* const state = new FakeState();  // Never destroyed: see header.
  return *state;
}

FakeState::FakeState()
    : devices_(64),
      mig_devices_(64 * kMaxMigSlots),
      gpu_instances_(64 * kMaxMigSlots),
      compute_instances_(64 * kMaxMigSlots) {
  for (size_t i = 0; i < devices_.size(); ++i) devices_[i].index = static_cast<int>(i);
  for (size_t i = 0; i < mig_devices_.size(); ++i) {
    int index = static_cast<int>(i) / kMaxMigSlots;
    int slot = static_cast<int>(i) % kMaxMigSlots;
    mig_devices_[i].index = index;
    mig_devices_[i].mig_slot = slot;
    gpu_instances_[i] = {index, slot};
    compute_instances_[i] = {index, slot};
  }
}

bool FakeState::SlotOf(const nvmlGpuInstance_st* gi, int* index, int* slot) const {
  if (gi == nullptr || gi < gpu_instances_.data() || gi >= gpu_instances_.data() + gpu_instances_.size())
    return false;
  *index = gi->index;
  *slot = gi->slot;
  return true;
}

bool FakeState::SlotOf(const nvmlComputeInstance_st* ci, int* index, int* slot) const {
  if (ci == nullptr || ci < compute_instances_.data() ||
      ci >= compute_instances_.data() + compute_instances_.size()) {
    return false;
  }
  *index = ci->index;
  *slot = ci->slot;
  return true;
}

void FakeState::Remember(const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mu_);
  live_handles_.insert(handle);
}

bool FakeState::Forget(const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mu_);
  return live_handles_.erase(handle) > 0;
}

bool FakeState::IsLive(const void* handle) {
  std::lock_guard<std::mutex> lock(handles_mu_);
  return live_handles_.count(handle) > 0;
}

Return FakeState::ResolveMig(nvmlDevice_st* device, int* index, int* slot,
                             std::shared_ptr<const sim::WorldState>* state) {
  if (!IsMigHandle(device)) return gpu::nvml::kErrorInvalidArgument;
  Return r = Resolve(Handle(device->index), index, state);
  if (r != gpu::nvml::kSuccess) return r;
  if (device->mig_slot >=
      static_cast<int>((*state)->gpus[static_cast<size_t>(*index)].mig_instances.size())) {
    return gpu::nvml::kErrorNotFound;
  }
  *slot = device->mig_slot;
  return gpu::nvml::kSuccess;
}

Return FakeState::Init() {
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ > 0) {
    ++refcount_;
    return gpu::nvml::kSuccess;
  }
  Result<std::unique_ptr<sim::World>> world = sim::World::Open(sim::WorldOptions{}, RealClock());
  if (!world.ok()) {
    // Explain once on stderr, as a driver's library logs to the system log:
    // an NVML client only sees the code.
    std::fprintf(stderr, "fake libnvidia-ml: %s\n", world.status().ToString().c_str());
    return gpu::nvml::kErrorDriverNotLoaded;
  }
  const sim::Scenario& scenario = world.value()->scenario();
  if (scenario.init_error == "lib_rm_version_mismatch") return gpu::nvml::kErrorLibRmVersionMismatch;
  if (scenario.init_error == "no_permission") return gpu::nvml::kErrorNoPermission;
  if (!world.value()->State()->is_driver_loaded) return gpu::nvml::kErrorDriverNotLoaded;
  world_ = std::move(world).value();
  refcount_ = 1;
  return gpu::nvml::kSuccess;
}

Return FakeState::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return gpu::nvml::kErrorUninitialized;
  if (--refcount_ == 0) world_.reset();
  return gpu::nvml::kSuccess;
}

sim::World* FakeState::world() {
  std::lock_guard<std::mutex> lock(mu_);
  return world_.get();
}

Return FakeState::Resolve(nvmlDevice_st* device, int* index, std::shared_ptr<const sim::WorldState>* state) {
  sim::World* w = world();
  if (w == nullptr) return gpu::nvml::kErrorUninitialized;
  if (device == nullptr || device < devices_.data() || device >= devices_.data() + devices_.size()) {
    return gpu::nvml::kErrorInvalidArgument;
  }
  if (device->index >= static_cast<int>(w->scenario().gpus.size())) {
    return gpu::nvml::kErrorInvalidArgument;
  }
  // A hung driver call blocks while the scenario's nvml_hang fault holds.
  *state = w->StateWhenResponsive(device->index);
  if (!(*state)->is_driver_loaded) return gpu::nvml::kErrorDriverNotLoaded;
  *index = device->index;
  if ((*state)->gpus[static_cast<size_t>(*index)].is_lost) return gpu::nvml::kErrorGpuIsLost;
  return gpu::nvml::kSuccess;
}

const char* ErrorString(Return code) {
  switch (code) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupt request issue";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 17:
      return "The operating system has blocked the request.";
    case 18:
      return "RM has detected an NVML/RM version mismatch.";
    case 19:
      return "In use by another client";
    case 20:
      return "Insufficient Memory";
    case 21:
      return "No data";
    case 25:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

}  // namespace tarmac::fakenvml
