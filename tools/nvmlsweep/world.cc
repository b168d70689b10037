// SPDX-License-Identifier: Apache-2.0
#include "world.h"

#include <unistd.h>

#include <cstring>

namespace tarmac::nvmlsweep {
namespace {

using namespace gpu::nvml;  // NOLINT: the ABI's names.

std::string Text(const Library& lib, const char* name, void* device) {
  char buffer[128] = {};
  if (lib.Call(name, {W(device), W(buffer), sizeof buffer}) != kSuccess) return "";
  return buffer;
}

// The facts of `d` later calls take as arguments.
void ReadFacts(const Library& lib, SweptDevice* d) {
  d->uuid = Text(lib, "nvmlDeviceGetUUID", d->handle);
  d->serial = Text(lib, "nvmlDeviceGetSerial", d->handle);
  if (lib.Call("nvmlDeviceGetPciInfo_v3", {W(d->handle), W(&d->pci)}) == kErrorGpuIsLost) d->lost = true;
  d->bus_id = d->pci.busId;
  MemoryV1 memory{};
  if (lib.Call("nvmlDeviceGetMemoryInfo", {W(d->handle), W(&memory)}) == kErrorGpuIsLost) d->lost = true;
  unsigned current = 0, pending = 0;
  lib.Call("nvmlDeviceGetMigMode", {W(d->handle), W(&current), W(&pending)});
  d->mig_on = d->mig < 0 && current == 1;
  lib.Call("nvmlDeviceGetSupportedEventTypes", {W(d->handle), W(&d->event_types)});
  lib.Call("nvmlDeviceGetMaxClockInfo", {W(d->handle), kClockMem, W(&d->max_memory_clock_mhz)});
  ProcessInfoV2 procs[64] = {};
  unsigned count = 64;
  if (lib.Call("nvmlDeviceGetComputeRunningProcesses_v3", {W(d->handle), W(&count), W(procs)}) == kSuccess) {
    for (unsigned i = 0; i < count && i < 64; ++i) d->pids.push_back(procs[i].pid);
  }
}

unsigned ComputeInstanceId(const Library& lib, void* ci) {
  unsigned char info[64] = {};  // nvmlComputeInstanceInfo_t: device, gpuInstance, id, ...
  lib.Call("nvmlComputeInstanceGetInfo_v2", {W(ci), W(info)});
  unsigned id = 0;
  std::memcpy(&id, info + 2 * sizeof(void*), sizeof id);
  return id;
}

// The GPU and compute instances of the MIG-enabled GPU `d`.
void FindInstances(const Library& lib, SweptDevice* d, SweptWorld* world) {
  for (unsigned profile_id : d->gi_profile_ids) {
    for (void* gi : GpuInstancesOf(lib, d->handle, profile_id)) {
      SweptInstance g;
      g.handle = gi;
      g.gpu = d->gpu;
      g.id = InfoOf(lib, gi).id;
      d->gi_ids.push_back(g.id);
      g.ci_profile_ids = ComputeInstanceProfileIds(lib, gi);
      for (unsigned ci_profile : g.ci_profile_ids) {
        void* cis[8] = {};
        unsigned count = 0;
        if (lib.Call("nvmlGpuInstanceGetComputeInstances", {W(gi), ci_profile, W(cis), W(&count)}) !=
            kSuccess)
          continue;
        for (unsigned i = 0; i < count && i < 8; ++i) {
          SweptInstance c;
          c.handle = cis[i];
          c.gpu = d->gpu;
          c.id = g.id;
          c.compute = true;
          c.ci_id = ComputeInstanceId(lib, cis[i]);
          g.ci_ids.push_back(c.ci_id);
          world->compute_instances.push_back(c);
        }
      }
      world->gpu_instances.push_back(g);
    }
  }
}

}  // namespace

std::string SweptDevice::Label() const {
  return "gpu" + std::to_string(gpu) + (mig >= 0 ? "/mig" + std::to_string(mig) : "");
}

std::string SweptDevice::Tags(const std::string& caller) const {
  std::string tags = mig >= 0 ? "mig-device" : "gpu";
  if (mig_on) tags += ",mig-on";
  if (lost) tags += ",lost";
  if (peer_lost) tags += ",peer-lost";
  return tags + "," + caller;
}

std::string SweptInstance::Label() const {
  std::string label = "gpu" + std::to_string(gpu) + "/gi" + std::to_string(id);
  return compute ? label + "/ci" + std::to_string(ci_id) : label;
}

void* SweptWorld::Gpu(int gpu) const {
  for (const SweptDevice& d : devices)
    if (d.mig < 0 && d.gpu == gpu) return d.handle;
  return nullptr;
}

std::vector<unsigned> GpuInstanceProfileIds(const Library& lib, void* device) {
  std::vector<unsigned> ids;
  for (unsigned profile = 0; profile < 10; ++profile) {
    unsigned info[32] = {};  // nvmlGpuInstanceProfileInfo_t: id first.
    if (lib.Call("nvmlDeviceGetGpuInstanceProfileInfo", {W(device), profile, W(info)}) == kSuccess)
      ids.push_back(info[0]);
  }
  return ids;
}

std::vector<unsigned> ComputeInstanceProfileIds(const Library& lib, void* gpu_instance) {
  std::vector<unsigned> ids;
  for (unsigned profile = 0; profile < 8; ++profile) {
    unsigned info[32] = {};  // nvmlComputeInstanceProfileInfo_t: id first.
    if (lib.Call("nvmlGpuInstanceGetComputeInstanceProfileInfo", {W(gpu_instance), profile, 0, W(info)}) ==
        kSuccess)
      ids.push_back(info[0]);
  }
  return ids;
}

GpuInstanceInfo InfoOf(const Library& lib, void* gpu_instance) {
  GpuInstanceInfo info{};
  lib.Call("nvmlGpuInstanceGetInfo", {W(gpu_instance), W(&info)});
  return info;
}

std::vector<std::pair<unsigned, void*>> MigDevicesOf(const Library& lib, void* gpu) {
  std::vector<std::pair<unsigned, void*>> out;
  unsigned max = 0;
  lib.Call("nvmlDeviceGetMaxMigDeviceCount", {W(gpu), W(&max)});
  for (unsigned m = 0; m < max; ++m) {
    void* handle = nullptr;
    if (lib.Call("nvmlDeviceGetMigDeviceHandleByIndex", {W(gpu), m, W(&handle)}) == kSuccess)
      out.emplace_back(m, handle);
  }
  return out;
}

std::vector<void*> GpuInstancesOf(const Library& lib, void* device, unsigned id) {
  void* gis[16] = {};
  unsigned count = 0;
  if (lib.Call("nvmlDeviceGetGpuInstances", {W(device), id, W(gis), W(&count)}) != kSuccess) return {};
  return std::vector<void*>(gis, gis + std::min(count, 16u));
}

SweptWorld Discover(const Library& lib) {
  SweptWorld world;
  world.caller = ::geteuid() == 0 ? "root" : "user";
  unsigned count = 0;
  lib.Call("nvmlDeviceGetCount_v2", {W(&count)});
  world.gpu_count = static_cast<int>(count);
  std::vector<SweptDevice> migs;
  bool any_lost = false;
  for (unsigned i = 0; i < count; ++i) {
    SweptDevice d;
    d.gpu = static_cast<int>(i);
    int r = lib.Call("nvmlDeviceGetHandleByIndex_v2", {i, W(&d.handle)});
    any_lost = any_lost || r == kErrorGpuIsLost;
    if (r != kSuccess) continue;
    ReadFacts(lib, &d);
    if (d.mig_on) {
      d.gi_profile_ids = GpuInstanceProfileIds(lib, d.handle);
      FindInstances(lib, &d, &world);
      for (const auto& [m, handle] : MigDevicesOf(lib, d.handle)) {
        SweptDevice md;
        md.gpu = d.gpu;
        md.mig = static_cast<int>(m);
        md.handle = handle;
        ReadFacts(lib, &md);
        migs.push_back(md);
      }
    }
    world.devices.push_back(d);
  }
  world.devices.insert(world.devices.end(), migs.begin(), migs.end());
  for (SweptDevice& d : world.devices) d.peer_lost = any_lost || d.lost;
  return world;
}

}  // namespace tarmac::nvmlsweep
