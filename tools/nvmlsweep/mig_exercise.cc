// SPDX-License-Identifier: Apache-2.0
#include "mig_exercise.h"

#include <string>

namespace tarmac::nvmlsweep {
namespace {

using namespace gpu::nvml;  // NOLINT: the ABI's names.

struct Placement {  // nvmlGpuInstancePlacement_t
  unsigned start;
  unsigned size;
};

// What a profile looks like on a GPU now.
struct Count {
  size_t instances = 0;
  unsigned remaining = 0;
  unsigned mig_devices = 0;
};

Count CountNow(const Library& lib, void* gpu, unsigned id) {
  Count c;
  c.instances = GpuInstancesOf(lib, gpu, id).size();
  lib.Call("nvmlDeviceGetGpuInstanceRemainingCapacity", {W(gpu), id, W(&c.remaining)});
  c.mig_devices = static_cast<unsigned>(MigDevicesOf(lib, gpu).size());
  return c;
}

std::string Describe(const Count& c) {
  return std::to_string(c.instances) + " instances, " + std::to_string(c.remaining) + " more fit, " +
         std::to_string(c.mig_devices) + " MIG devices";
}

class Exercise {
 public:
  Exercise(Library& lib, const SweptDevice& gpu, const std::string& caller)
      : lib_(lib), gpu_(gpu), where_{gpu.Label(), gpu.Tags(caller)} {}

  // Creates an instance of profile `id` (at a free placement when
  // `placed`), asks for its compute instance, destroys both.
  void Profile(unsigned id, bool placed) {
    std::string arg = "profile_id=" + std::to_string(id);
    Count before = CountNow(lib_, gpu_.handle, id);
    if (before.remaining == 0) return;
    void* gi = nullptr;
    int asked = -1;
    int r = placed ? CreatePlaced(id, &gi, &asked)
                   : lib_.Record("nvmlDeviceCreateGpuInstance", where_, arg, {W(gpu_.handle), id, W(&gi)});
    Count after = CountNow(lib_, gpu_.handle, id);
    if (r != kSuccess) {
      Check("mig-refused", after.instances == before.instances, CodeName(r) + "; " + Describe(after));
      return;
    }
    Check("mig-create",
          after.instances == before.instances + 1 && after.remaining < before.remaining &&
              after.mig_devices == before.mig_devices + 1,
          "before: " + Describe(before) + "; after: " + Describe(after));
    if (asked >= 0) {
      unsigned start = InfoOf(lib_, gi).start;
      Check("mig-placement", start == static_cast<unsigned>(asked),
            "asked at memory slice " + std::to_string(asked) + ", placed at " + std::to_string(start));
    }
    ComputeInstance(gi);
    Where gi_where{gpu_.Label() + "/new", "gi," + where_.tags.substr(where_.tags.rfind(',') + 1)};
    r = lib_.Record("nvmlGpuInstanceDestroy", gi_where, arg, {W(gi)});
    Count gone = CountNow(lib_, gpu_.handle, id);
    Check("mig-destroy",
          r == kSuccess && gone.instances == before.instances && gone.remaining == before.remaining &&
              gone.mig_devices == before.mig_devices,
          CodeName(r) + "; " + Describe(gone));
  }

 private:
  void Check(const std::string& name, bool ok, const std::string& detail) {
    lib_.Line({"check", name, where_.handle, where_.tags, ok ? "ok" : "disagree", detail});
  }

  // The size query, the placements, then a creation at each until one is free.
  int CreatePlaced(unsigned id, void** gi, int* asked) {
    std::string arg = "profile_id=" + std::to_string(id);
    unsigned count = 0;
    lib_.Record("nvmlDeviceGetGpuInstancePossiblePlacements_v2#size", where_, arg,
                {W(gpu_.handle), id, 0, W(&count)});
    Placement placements[16] = {};
    count = std::min(count, 16u);
    lib_.Record("nvmlDeviceGetGpuInstancePossiblePlacements_v2", where_, arg,
                {W(gpu_.handle), id, W(placements), W(&count)});
    int r = kErrorInsufficientResources;
    for (unsigned i = 0; i < count && r == kErrorInsufficientResources; ++i) {
      *asked = static_cast<int>(placements[i].start);
      r = lib_.Record("nvmlDeviceCreateGpuInstanceWithPlacement", where_,
                      arg + " start=" + std::to_string(placements[i].start),
                      {W(gpu_.handle), id, W(&placements[i]), W(gi)});
    }
    return r;
  }

  // The new GPU instance's compute instances: as NVML documents, one is
  // created by profile ID (and at a placement), then destroyed.
  void ComputeInstance(void* gi) {
    std::string caller = where_.tags.substr(where_.tags.rfind(',') + 1);
    Where gi_where{gpu_.Label() + "/new", "gi," + caller};
    std::vector<unsigned> ids = ComputeInstanceProfileIds(lib_, gi);
    if (ids.empty()) return;
    unsigned full = ids.back();
    std::string arg = "ci_profile_id=" + std::to_string(full);
    void* ci = nullptr;
    lib_.Record("nvmlGpuInstanceCreateComputeInstance", gi_where, arg, {W(gi), full, W(&ci)});
    Placement at{0, 0};
    void* placed = nullptr;
    lib_.Record("nvmlGpuInstanceCreateComputeInstanceWithPlacement", gi_where, arg,
                {W(gi), full, W(&at), W(&placed)});
    void* cis[8] = {};
    unsigned count = 0;
    lib_.Call("nvmlGpuInstanceGetComputeInstances", {W(gi), full, W(cis), W(&count)});
    if (count > 0)
      lib_.Record("nvmlComputeInstanceDestroy", {gpu_.Label() + "/new/ci", "ci," + caller}, "", {W(cis[0])});
  }

  Library& lib_;
  const SweptDevice& gpu_;
  Where where_;
};

}  // namespace

void ExerciseMig(Library& lib, const SweptWorld& world) {
  for (const SweptDevice& d : world.devices) {
    if (d.mig >= 0 || !d.mig_on || d.lost) continue;
    Exercise exercise(lib, d, world.caller);
    bool first = true;
    for (unsigned id : GpuInstanceProfileIds(lib, d.handle)) {
      exercise.Profile(id, true);
      if (first) exercise.Profile(id, false);
      first = false;
    }
  }
}

}  // namespace tarmac::nvmlsweep
