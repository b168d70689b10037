// SPDX-License-Identifier: Apache-2.0
//
// What the library hands out, found the way NVML documents finding it: the
// GPUs by index, each MIG-enabled GPU's MIG devices by index, its GPU
// instance profiles by their constants (then by `info.id`), the GPU and
// compute instances of each, and per device the facts a call takes as an
// argument (its UUID, PCI bus id, serial, processes, event types).
#pragma once

#include <string>
#include <vector>

#include "gpu/nvml_api.h"
#include "library.h"

namespace tarmac::nvmlsweep {

struct SweptDevice {
  void* handle = nullptr;
  int gpu = 0;   // The GPU's index (a MIG device's parent's).
  int mig = -1;  // The MIG device's index on its GPU; -1 for a GPU.
  bool mig_on = false;
  bool lost = false;       // A call on it answered GPU_IS_LOST.
  bool peer_lost = false;  // Another GPU of the host did.
  std::string uuid, bus_id, serial;
  gpu::nvml::PciInfo pci{};
  std::vector<unsigned> gi_profile_ids;  // `info.id` of each profile it answers.
  std::vector<unsigned> gi_ids;          // Its GPU instances' ids.
  std::vector<unsigned> pids;            // Its compute processes.
  unsigned long long event_types = 0;
  unsigned max_memory_clock_mhz = 0;

  std::string Label() const;
  std::string Tags(const std::string& caller) const;
};

struct SweptInstance {
  void* handle = nullptr;
  int gpu = 0;
  unsigned id = 0;                       // The GPU instance's id.
  std::vector<unsigned> ci_profile_ids;  // (GPU instance) its compute profiles' ids.
  std::vector<unsigned> ci_ids;          // (GPU instance) its compute instances' ids.
  unsigned ci_id = 0;                    // (compute instance) its id.
  bool compute = false;                  // A compute instance, not a GPU instance.

  std::string Label() const;
};

struct SweptWorld {
  std::vector<SweptDevice> devices;  // GPUs first, then MIG devices.
  std::vector<SweptInstance> gpu_instances, compute_instances;
  int gpu_count = 0;
  std::string caller;  // "root" or "user".

  // The GPU handle with index `gpu`, or nullptr.
  void* Gpu(int gpu) const;
};

// Finds what `lib` (initialized) hands out.
SweptWorld Discover(const Library& lib);

// The GPU instance profile IDs `device` answers, by asking each profile
// constant's info (nvmlDeviceGetGpuInstanceProfileInfo, then `info.id`).
std::vector<unsigned> GpuInstanceProfileIds(const Library& lib, void* device);
// The same for a GPU instance's compute instance profiles.
std::vector<unsigned> ComputeInstanceProfileIds(const Library& lib, void* gpu_instance);
// The GPU instances of `device` of profile `id` (nvmlDeviceGetGpuInstances).
std::vector<void*> GpuInstancesOf(const Library& lib, void* device, unsigned id);
// The MIG device handles of `gpu` with their indices (of those up to its
// maximum count, the ones that answer).
std::vector<std::pair<unsigned, void*>> MigDevicesOf(const Library& lib, void* gpu);

// nvmlGpuInstanceInfo_t.
struct GpuInstanceInfo {
  void* device;
  unsigned id, profile_id, start, size;
};
// A GPU instance's info (zeroed when the call fails).
GpuInstanceInfo InfoOf(const Library& lib, void* gpu_instance);

}  // namespace tarmac::nvmlsweep
