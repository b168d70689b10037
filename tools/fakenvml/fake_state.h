// SPDX-License-Identifier: Apache-2.0
//
// Process state of the fake libnvidia-ml: the init refcount, the simulated
// world it serves, device handles and event sets.
//
// A C library whose API carries no context pointer must keep its state per
// process; this one object (FakeState::Get) is that state, and it is the
// only mutable global in tarmac. Every method is thread-safe: NVML promises
// thread safety, so the fake keeps it.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "gpu/nvml_api.h"
#include "sim/world.h"

// Device handles point at these (nvmlDevice_t is opaque to callers): a
// whole GPU (mig_slot -1) or the MIG device at `mig_slot` of its layout.
struct nvmlDevice_st {
  int index;
  int mig_slot = -1;
};

// An event set: registered devices and types, and delivered-so-far.
struct nvmlEventSet_st {
  std::vector<unsigned long long> mask_by_gpu;
  std::chrono::system_clock::time_point seen_until;
  std::deque<tarmac::sim::WorldEvent> pending;
};

// A GPM sample: which GPU (and MIG GPU instance, or -1 for the whole
// GPU), and when it was taken.
struct nvmlGpmSample_st {
  int index = -1;
  int gpu_instance_id = -1;
  std::chrono::system_clock::time_point taken_at;
};

// MIG GPU and compute instance handles: the instance at `slot` of GPU
// `index`'s layout (each GPU instance has one compute instance, id 0).
struct nvmlGpuInstance_st {
  int index;
  int slot;
};
struct nvmlComputeInstance_st {
  int index;
  int slot;
};

namespace tarmac::fakenvml {

using gpu::nvml::Return;

class FakeState {
 public:
  static FakeState& Get();

  // Refcounted init/shutdown (nvmlInit_v2, nvmlInitWithFlags, nvmlShutdown).
  Return Init();
  Return Shutdown();

  // The world while initialized; null otherwise. Callers hold the returned
  // pointer only for the duration of one NVML call.
  sim::World* world();

  // Resolves a handle to a GPU index and the current state. Returns
  // UNINITIALIZED, INVALID_ARGUMENT, DRIVER_NOT_LOADED or GPU_IS_LOST as the
  // driver would; SUCCESS with *index and *state set otherwise.
  Return Resolve(nvmlDevice_st* device, int* index, std::shared_ptr<const sim::WorldState>* state);

  nvmlDevice_st* Handle(int index) { return &devices_[static_cast<size_t>(index)]; }

  // MIG device handles: the instance at `slot` (0..kMaxMigSlots-1) of GPU
  // `index`'s layout.
  static constexpr int kMaxMigSlots = 7;
  nvmlDevice_st* MigHandle(int index, int slot) {
    return &mig_devices_[static_cast<size_t>(index * kMaxMigSlots + slot)];
  }
  bool IsMigHandle(const nvmlDevice_st* device) const {
    return device != nullptr && device >= mig_devices_.data() &&
           device < mig_devices_.data() + mig_devices_.size();
  }
  // Resolves a MIG handle as Resolve does a GPU's; NOT_FOUND when its slot
  // holds no instance now (the layout changed), INVALID_ARGUMENT when it is
  // not a MIG handle.
  Return ResolveMig(nvmlDevice_st* device, int* index, int* slot,
                    std::shared_ptr<const sim::WorldState>* state);

  // GPU and compute instance handles, as MIG device handles are.
  nvmlGpuInstance_st* GpuInstanceHandle(int index, int slot) {
    return &gpu_instances_[static_cast<size_t>(index * kMaxMigSlots + slot)];
  }
  nvmlComputeInstance_st* ComputeInstanceHandle(int index, int slot) {
    return &compute_instances_[static_cast<size_t>(index * kMaxMigSlots + slot)];
  }
  // The slot of a GPU or compute instance handle; false when it is not one
  // this library gave out.
  bool SlotOf(const nvmlGpuInstance_st* gi, int* index, int* slot) const;
  bool SlotOf(const nvmlComputeInstance_st* ci, int* index, int* slot) const;

  // Event sets and GPM samples this library allocated and has not freed:
  // a handle it did not give out is refused (INVALID_ARGUMENT), never
  // dereferenced.
  void Remember(const void* handle);
  bool Forget(const void* handle);
  bool IsLive(const void* handle);

 private:
  FakeState();

  std::mutex mu_;
  int refcount_ = 0;
  std::unique_ptr<sim::World> world_;
  std::vector<nvmlDevice_st> devices_;
  std::vector<nvmlDevice_st> mig_devices_;
  std::vector<nvmlGpuInstance_st> gpu_instances_;
  std::vector<nvmlComputeInstance_st> compute_instances_;
  std::mutex handles_mu_;
  std::set<const void*> live_handles_;
};

// Static text for an NVML return code (valid forever, even after shutdown).
const char* ErrorString(Return code);

}  // namespace tarmac::fakenvml
