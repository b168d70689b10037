// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): MIG GPU and
// compute instances as the driver's management API shows them, from the
// simulated layout (the scenario's, then its mig_reconfigure faults).
// Each GPU instance holds one compute instance (id 0) over all its slices.
// A root caller creates and destroys GPU instances for every process of the
// world (sim/mig_journal.h): a new instance gets the lowest free id, a fresh
// UUID and its compute instance at once (as `nvidia-smi mig -cgi P -C`);
// the others keep theirs. Destroying one with processes in it is IN_USE; a
// profile with no room left is INSUFFICIENT_RESOURCES. A compute instance
// is made and destroyed only with its GPU instance: another does not fit
// (INSUFFICIENT_RESOURCES), and destroying it alone answers NOT_SUPPORTED
// (a driver would leave an empty GPU instance). Callers that are not root
// get NO_PERMISSION for all of these, as from the driver.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "fake_abi.h"
#include "fake_device.h"
#include "nvidia/mig_profiles.h"
#include "sim/mig_layout.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
namespace abi = tarmac::fakenvml::abi;

// A profile as NVML numbers it: the NVML_GPU_INSTANCE_PROFILE_* constant a
// caller asks by, and the profile id the driver reports (nvidia-smi mig
// -lgip), with the model's slices.
struct NvmlProfile {
  unsigned constant = 0;
  unsigned id = 0;
  nvidia::MigProfile profile;
};

std::vector<NvmlProfile> ProfilesOf(const sim::GpuSpec& spec) {
  std::vector<NvmlProfile> out;
  for (const nvidia::MigProfile& p : nvidia::MigProfilesFor(spec.model, spec.memory_total_bytes)) {
    NvmlProfile n;
    n.profile = p;
    switch (p.compute_slices) {
      case 1:
        n.constant = p.memory_slices == 1 ? 0 : 9;
        n.id = p.memory_slices == 1 ? 19 : 15;
        break;
      case 2:
        n.constant = 1;
        n.id = 14;
        break;
      case 3:
        n.constant = 2;
        n.id = 9;
        break;
      case 4:
        n.constant = 3;
        n.id = 5;
        break;
      default:
        n.constant = 4;
        n.id = 0;
        break;
    }
    out.push_back(n);
  }
  return out;
}

const NvmlProfile* ByConstant(const std::vector<NvmlProfile>& profiles, unsigned constant) {
  for (const NvmlProfile& p : profiles) {
    if (p.constant == constant) return &p;
  }
  return nullptr;
}

// By the profile ID a caller got from nvmlDeviceGetGpuInstanceProfileInfo
// (`info.id`): what every call after it takes (NVML API reference, "GPU
// instance management": the profileId parameters).
const NvmlProfile* ById(const std::vector<NvmlProfile>& profiles, unsigned id) {
  for (const NvmlProfile& p : profiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

const NvmlProfile* ByName(const std::vector<NvmlProfile>& profiles, const std::string& name) {
  for (const NvmlProfile& p : profiles) {
    if (p.profile.name == name) return &p;
  }
  return nullptr;
}

// A MIG-mode GPU's call: the device, or NOT_SUPPORTED without MIG.
Dev OpenMigGpu(nvmlDevice_st* device) {
  Dev d = Open(device);
  if (d.r == kSuccess && !d.spec->is_mig_enabled) d.r = kErrorNotSupported;
  return d;
}

// A GPU instance handle's GPU and its instance now.
struct Instance {
  Dev d;
  int slot = 0;
  const sim::MigInstanceState* m = nullptr;
};

Instance Failed(Return r) {
  Instance in;
  in.d.r = r;
  return in;
}

Instance OpenInstance(int index, int slot) {
  Instance in;
  in.d = Open(Fake().Handle(index));
  if (in.d.r != kSuccess) return in;
  if (slot >= static_cast<int>(in.d.g->mig_instances.size())) {
    in.d.r = kErrorInvalidArgument;  // Gone with a reconfiguration.
    return in;
  }
  in.slot = slot;
  in.m = &in.d.g->mig_instances[static_cast<size_t>(slot)];
  return in;
}

Instance OpenGpuInstance(nvmlGpuInstance_st* gi) {
  int index = 0, slot = 0;
  if (Fake().world() == nullptr) return Failed(kErrorUninitialized);
  if (!Fake().SlotOf(gi, &index, &slot)) return Failed(kErrorInvalidArgument);
  return OpenInstance(index, slot);
}

Instance OpenComputeInstance(nvmlComputeInstance_st* ci) {
  int index = 0, slot = 0;
  if (Fake().world() == nullptr) return Failed(kErrorUninitialized);
  if (!Fake().SlotOf(ci, &index, &slot)) return Failed(kErrorInvalidArgument);
  return OpenInstance(index, slot);
}

// The layout now, as specs.
std::vector<sim::MigInstanceSpec> LayoutOf(const sim::GpuState& g) {
  std::vector<sim::MigInstanceSpec> out;
  for (const sim::MigInstanceState& m : g.mig_instances) out.push_back(*m.spec);
  return out;
}

// The memory slices the instance sits on (sim::MigMemoryStarts).
abi::Placement PlacementOf(const Instance& in, const std::vector<NvmlProfile>& profiles) {
  std::vector<int> starts = sim::MigMemoryStarts(*in.d.spec, LayoutOf(*in.d.g));
  const NvmlProfile* p = ByName(profiles, in.m->spec->profile);
  unsigned start = static_cast<size_t>(in.slot) < starts.size() ? static_cast<unsigned>(starts[in.slot]) : 0;
  return {start, p != nullptr ? static_cast<unsigned>(p->profile.memory_slices) : 1};
}

bool IsRoot() { return ::geteuid() == 0; }

// Where a profile's instance may start, in memory slices: at a multiple of
// its size, within the eight memory slices, its compute slices within the
// seven (the placements of the MIG user guide's profile tables: 1g.10gb at
// 0-6, 1g.20gb at 0, 2, 4, 6, 2g at 0, 2, 4, 3g at 0, 4, 4g and 7g at 0).
std::vector<abi::Placement> PlacementsOf(const NvmlProfile& p) {
  std::vector<abi::Placement> out;
  for (int start : nvidia::MigPlacementStarts(p.profile))
    out.push_back({static_cast<unsigned>(start), static_cast<unsigned>(p.profile.memory_slices)});
  return out;
}

// Whether a process runs in the instance now.
bool InUse(const Instance& in) {
  for (const sim::ProcessState& p : in.d.g->processes) {
    if (p.gpu_instance_id == in.m->spec->gpu_instance_id) return true;
  }
  return false;
}

// The layout with every instance's memory start written down, so that no
// instance moves when others come or go, as on a real GPU.
std::vector<sim::MigInstanceSpec> PlacedLayoutOf(const sim::GpuSpec& spec, const sim::GpuState& g) {
  std::vector<sim::MigInstanceSpec> layout = LayoutOf(g);
  std::vector<int> starts = sim::MigMemoryStarts(spec, layout);
  for (size_t i = 0; i < layout.size() && i < starts.size(); ++i) layout[i].memory_start = starts[i];
  return layout;
}

// The memory slices the layout's instances hold, a bit each.
unsigned UsedSlices(const sim::GpuSpec& spec, const std::vector<sim::MigInstanceSpec>& layout,
                    const std::vector<NvmlProfile>& profiles) {
  std::vector<int> starts = sim::MigMemoryStarts(spec, layout);
  unsigned used = 0;
  for (size_t i = 0; i < layout.size() && i < starts.size(); ++i) {
    const NvmlProfile* p = ByName(profiles, layout[i].profile);
    if (p != nullptr) used |= ((1u << p->profile.memory_slices) - 1) << starts[i];
  }
  return used;
}

// The free placements of `p` given the slices `used`, lowest first, each
// taken in turn (so their count is how many more fit).
std::vector<unsigned> FreeStarts(const NvmlProfile& p, unsigned used) {
  std::vector<unsigned> out;
  unsigned one = (1u << p.profile.memory_slices) - 1;
  for (int start : nvidia::MigPlacementStarts(p.profile)) {
    unsigned mask = one << start;
    if ((used & mask) != 0) continue;
    out.push_back(static_cast<unsigned>(start));
    used |= mask;
  }
  return out;
}

// How many more of `p` fit on the GPU: its own limit, and its placements
// that no instance holds a memory slice of.
int RemainingOf(const sim::GpuSpec& spec, const sim::GpuState& g, const std::vector<NvmlProfile>& profiles,
                const NvmlProfile& p) {
  int same = 0;
  for (const sim::MigInstanceState& m : g.mig_instances) same += m.spec->profile == p.profile.name ? 1 : 0;
  int free = static_cast<int>(FreeStarts(p, UsedSlices(spec, LayoutOf(g), profiles)).size());
  return std::max(0, std::min(p.profile.max_count - same, free));
}

// Creates an instance of the profile with ID `profile_id` on `d`'s GPU, at
// memory slice `start` (-1: its lowest free placement), and hands back its
// handle. INSUFFICIENT_RESOURCES when the placement is taken or none is
// free.
Return CreateInstance(const Dev& d, unsigned profile_id, int start, nvmlGpuInstance_st** gi) {
  std::vector<NvmlProfile> profiles = ProfilesOf(*d.spec);
  const NvmlProfile* p = ById(profiles, profile_id);
  if (p == nullptr) return kErrorInvalidArgument;
  if (!IsRoot()) return kErrorNoPermission;
  std::vector<sim::MigInstanceSpec> layout = PlacedLayoutOf(*d.spec, *d.g);
  std::vector<unsigned> free = FreeStarts(*p, UsedSlices(*d.spec, layout, profiles));
  if (start < 0 && !free.empty()) start = static_cast<int>(free.front());
  if (std::find(free.begin(), free.end(), static_cast<unsigned>(start)) == free.end() ||
      RemainingOf(*d.spec, *d.g, profiles, *p) == 0 || d.g->mig_instances.size() >= FakeState::kMaxMigSlots) {
    return kErrorInsufficientResources;
  }
  int id = p->profile.compute_slices == nvidia::kMigComputeSlices ? 0 : 1;
  for (bool taken = true; taken && id != 0;) {
    taken = false;
    for (const sim::MigInstanceSpec& m : layout) taken |= m.gpu_instance_id == id;
    if (taken) ++id;
  }
  sim::World* world = Fake().world();
  int64_t generation =
      std::chrono::duration_cast<std::chrono::milliseconds>(world->Now() - world->epoch()).count();
  sim::MigInstanceSpec made;
  if (!sim::MakeMigInstance(*d.spec, std::string(p->profile.name), id, generation, &made))
    return kErrorNotSupported;
  made.memory_start = start;
  layout.push_back(made);
  if (!world->ChangeMigLayout(d.index, layout).ok()) return kErrorUnknown;
  Instance in = OpenInstance(d.index, static_cast<int>(layout.size()) - 1);
  if (in.d.r != kSuccess) return in.d.r;
  *gi = Fake().GpuInstanceHandle(d.index, in.slot);
  return kSuccess;
}

void FillProfile(const sim::GpuSpec& spec, const NvmlProfile& p, abi::GpuInstanceProfileInfo* info) {
  std::memset(info, 0, sizeof *info);
  info->id = p.id;
  info->sliceCount = static_cast<unsigned>(p.profile.compute_slices);
  info->instanceCount = static_cast<unsigned>(p.profile.max_count);
  info->multiprocessorCount = MigSms(spec, p.profile.compute_slices);
  info->copyEngineCount = static_cast<unsigned>(p.profile.compute_slices);
  info->decoderCount = static_cast<unsigned>(p.profile.compute_slices);
  info->jpegCount = static_cast<unsigned>(p.profile.compute_slices);
  info->ofaCount = p.profile.compute_slices == 7 ? 1 : 0;
  info->memorySizeMB = static_cast<unsigned long long>(spec.memory_total_bytes / nvidia::kMigMemorySlices *
                                                       p.profile.memory_slices) >>
                       20;
}

}  // namespace

NVML_EXPORT Return nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_st* device, unsigned profile,
                                                       abi::GpuInstanceProfileInfo* info) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (info == nullptr) return kErrorInvalidArgument;
  std::vector<NvmlProfile> profiles = ProfilesOf(*d.spec);
  const NvmlProfile* p = ByConstant(profiles, profile);
  if (p == nullptr) return profile > 9 ? kErrorInvalidArgument : kErrorNotSupported;
  FillProfile(*d.spec, *p, info);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_st* device, unsigned profile,
                                                        abi::GpuInstanceProfileInfoV2* info) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (info == nullptr) return kErrorInvalidArgument;
  if (info->version != abi::kGpuInstanceProfileInfoV2) return kErrorArgumentVersionMismatch;
  std::vector<NvmlProfile> profiles = ProfilesOf(*d.spec);
  const NvmlProfile* p = ByConstant(profiles, profile);
  if (p == nullptr) return profile > 9 ? kErrorInvalidArgument : kErrorNotSupported;
  abi::GpuInstanceProfileInfo v1{};
  FillProfile(*d.spec, *p, &v1);
  unsigned version = info->version;
  std::memset(info, 0, sizeof *info);
  info->version = version;
  info->id = v1.id;
  info->sliceCount = v1.sliceCount;
  info->instanceCount = v1.instanceCount;
  info->multiprocessorCount = v1.multiprocessorCount;
  info->copyEngineCount = v1.copyEngineCount;
  info->decoderCount = v1.decoderCount;
  info->jpegCount = v1.jpegCount;
  info->ofaCount = v1.ofaCount;
  info->memorySizeMB = v1.memorySizeMB;
  std::string name = "MIG " + std::string(p->profile.name);
  std::memcpy(info->name, name.c_str(), std::min(name.size() + 1, sizeof info->name));
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetGpuInstances(nvmlDevice_st* device, unsigned profile_id,
                                             nvmlGpuInstance_st** instances, unsigned* count) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (instances == nullptr || count == nullptr) return kErrorInvalidArgument;
  std::vector<NvmlProfile> profiles = ProfilesOf(*d.spec);
  const NvmlProfile* p = ById(profiles, profile_id);
  if (p == nullptr) return kErrorInvalidArgument;
  unsigned n = 0;
  for (size_t s = 0; s < d.g->mig_instances.size(); ++s) {
    if (d.g->mig_instances[s].spec->profile == p->profile.name) {
      instances[n++] = Fake().GpuInstanceHandle(d.index, static_cast<int>(s));
    }
  }
  *count = n;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetGpuInstanceById(nvmlDevice_st* device, unsigned id,
                                                nvmlGpuInstance_st** instance) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (instance == nullptr) return kErrorInvalidArgument;
  for (size_t s = 0; s < d.g->mig_instances.size(); ++s) {
    if (d.g->mig_instances[s].spec->gpu_instance_id == static_cast<int>(id)) {
      *instance = Fake().GpuInstanceHandle(d.index, static_cast<int>(s));
      return kSuccess;
    }
  }
  return kErrorNotFound;
}

NVML_EXPORT Return nvmlGpuInstanceGetInfo(nvmlGpuInstance_st* gi, abi::GpuInstanceInfo* info) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (info == nullptr) return kErrorInvalidArgument;
  std::vector<NvmlProfile> profiles = ProfilesOf(*in.d.spec);
  const NvmlProfile* p = ByName(profiles, in.m->spec->profile);
  info->device = Fake().Handle(in.d.index);
  info->id = static_cast<unsigned>(in.m->spec->gpu_instance_id);
  info->profileId = p != nullptr ? p->id : 0;
  info->placement = PlacementOf(in, profiles);
  return kSuccess;
}

// How many more of `profile` fit: its own limit, and the free compute and
// memory slices.
NVML_EXPORT Return nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_st* device, unsigned profile_id,
                                                             unsigned* count) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (count == nullptr) return kErrorInvalidArgument;
  std::vector<NvmlProfile> profiles = ProfilesOf(*d.spec);
  const NvmlProfile* p = ById(profiles, profile_id);
  if (p == nullptr) return kErrorInvalidArgument;
  *count = static_cast<unsigned>(RemainingOf(*d.spec, *d.g, profiles, *p));
  return kSuccess;
}

// Every placement the profile has (PlacementsOf), by the size-query
// protocol: a NULL array asks for the count.
NVML_EXPORT Return nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_st* device, unsigned profile_id,
                                                                 abi::Placement* placements,
                                                                 unsigned* count) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (count == nullptr) return kErrorInvalidArgument;
  std::vector<NvmlProfile> profiles = ProfilesOf(*d.spec);
  const NvmlProfile* p = ById(profiles, profile_id);
  if (p == nullptr) return kErrorInvalidArgument;
  std::vector<abi::Placement> all = PlacementsOf(*p);
  if (placements == nullptr) {
    *count = static_cast<unsigned>(all.size());
    return kSuccess;
  }
  if (*count < all.size()) {
    *count = static_cast<unsigned>(all.size());
    return kErrorInsufficientSize;
  }
  for (size_t i = 0; i < all.size(); ++i) placements[i] = all[i];
  *count = static_cast<unsigned>(all.size());
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceCreateGpuInstance(nvmlDevice_st* device, unsigned profile_id,
                                               nvmlGpuInstance_st** gi) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (gi == nullptr) return kErrorInvalidArgument;
  return CreateInstance(d, profile_id, -1, gi);
}

// The placement must be one the profile has (PlacementsOf), and free.
NVML_EXPORT Return nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_st* device, unsigned profile_id,
                                                            const abi::Placement* placement,
                                                            nvmlGpuInstance_st** gi) {
  Dev d = OpenMigGpu(device);
  if (d.r != kSuccess) return d.r;
  if (gi == nullptr || placement == nullptr) return kErrorInvalidArgument;
  const NvmlProfile* p = ById(ProfilesOf(*d.spec), profile_id);
  if (p == nullptr) return kErrorInvalidArgument;
  bool is_possible = false;
  for (const abi::Placement& q : PlacementsOf(*p))
    is_possible |= q.start == placement->start && q.size == placement->size;
  if (!is_possible) return kErrorInvalidArgument;
  return CreateInstance(d, profile_id, static_cast<int>(placement->start), gi);
}

NVML_EXPORT Return nvmlGpuInstanceDestroy(nvmlGpuInstance_st* gi) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (!IsRoot()) return kErrorNoPermission;
  if (InUse(in)) return kErrorInUse;
  std::vector<sim::MigInstanceSpec> layout = PlacedLayoutOf(*in.d.spec, *in.d.g);
  layout.erase(layout.begin() + in.slot);
  return Fake().world()->ChangeMigLayout(in.d.index, layout).ok() ? kSuccess : kErrorUnknown;
}

// --- compute instances: one per GPU instance, id 0, all its slices --------
//
// A GPU instance offers every compute instance profile that fits in it, as
// the MIG user guide's tables list them (a 3g instance: 1c, 2c and 3c; a
// 4g: 1c, 2c and 4c; a 7g: 1c, 2c, 3c, 4c and 7c). Its one compute
// instance spans all its slices, so no other fits beside it.

namespace {

// NVML_COMPUTE_INSTANCE_PROFILE_* of `slices` compute slices.
unsigned ComputeConstant(int slices) {
  switch (slices) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 3:
      return 2;
    case 4:
      return 3;
    default:
      return 4;
  }
}

// The compute slices of NVML_COMPUTE_INSTANCE_PROFILE_* `profile` in a GPU
// instance of `gi_slices`; 0 when that profile does not fit in it.
int ComputeSlicesOf(unsigned profile, int gi_slices) {
  static const int kSlices[] = {1, 2, 3, 4, 7};
  if (profile >= std::size(kSlices)) return 0;
  int slices = kSlices[profile];
  if (slices > gi_slices || (slices == 3 && gi_slices == 4)) return 0;
  return slices;
}

}  // namespace

NVML_EXPORT Return nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_st* gi, unsigned profile,
                                                                unsigned engine_profile,
                                                                abi::ComputeInstanceProfileInfo* info) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (info == nullptr || profile > 7 || engine_profile != 0) return kErrorInvalidArgument;
  int gi_slices = in.m->spec->compute_slices;
  int slices = ComputeSlicesOf(profile, gi_slices);
  if (slices == 0) return kErrorNotSupported;
  std::memset(info, 0, sizeof *info);
  info->id = profile;
  info->sliceCount = static_cast<unsigned>(slices);
  info->instanceCount = static_cast<unsigned>(gi_slices / slices);
  info->multiprocessorCount = MigSms(*in.d.spec, slices);
  info->sharedCopyEngineCount = static_cast<unsigned>(gi_slices);
  info->sharedDecoderCount = static_cast<unsigned>(gi_slices);
  info->sharedJpegCount = static_cast<unsigned>(gi_slices);
  return kSuccess;
}

NVML_EXPORT Return nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_st* gi, unsigned profile,
                                                                 unsigned engine_profile,
                                                                 abi::ComputeInstanceProfileInfoV2* info) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (info == nullptr) return kErrorInvalidArgument;
  if (info->version != abi::kComputeInstanceProfileInfoV2) return kErrorArgumentVersionMismatch;
  abi::ComputeInstanceProfileInfo v1{};
  Return r = nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, profile, engine_profile, &v1);
  if (r != kSuccess) return r;
  unsigned version = info->version;
  std::memset(info, 0, sizeof *info);
  info->version = version;
  info->id = v1.id;
  info->sliceCount = v1.sliceCount;
  info->instanceCount = v1.instanceCount;
  info->multiprocessorCount = v1.multiprocessorCount;
  info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
  info->sharedDecoderCount = v1.sharedDecoderCount;
  info->sharedJpegCount = v1.sharedJpegCount;
  std::string name = "MIG " + std::to_string(v1.sliceCount) + "c." + in.m->spec->profile;
  std::memcpy(info->name, name.c_str(), std::min(name.size() + 1, sizeof info->name));
  return kSuccess;
}

NVML_EXPORT Return nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_st* gi, unsigned profile,
                                                      nvmlComputeInstance_st** instances, unsigned* count) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (instances == nullptr || count == nullptr || profile > 7) return kErrorInvalidArgument;
  *count = 0;
  if (profile == ComputeConstant(in.m->spec->compute_slices)) {
    instances[0] = Fake().ComputeInstanceHandle(in.d.index, in.slot);
    *count = 1;
  }
  return kSuccess;
}

NVML_EXPORT Return nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_st* gi, unsigned id,
                                                         nvmlComputeInstance_st** ci) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (ci == nullptr) return kErrorInvalidArgument;
  if (id != static_cast<unsigned>(in.m->spec->compute_instance_id)) return kErrorNotFound;
  *ci = Fake().ComputeInstanceHandle(in.d.index, in.slot);
  return kSuccess;
}

NVML_EXPORT Return nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_st* ci, abi::ComputeInstanceInfo* info) {
  Instance in = OpenComputeInstance(ci);
  if (in.d.r != kSuccess) return in.d.r;
  if (info == nullptr) return kErrorInvalidArgument;
  info->device = Fake().Handle(in.d.index);
  info->gpuInstance = Fake().GpuInstanceHandle(in.d.index, in.slot);
  info->id = static_cast<unsigned>(in.m->spec->compute_instance_id);
  info->profileId = ComputeConstant(in.m->spec->compute_slices);
  info->placement = {0, static_cast<unsigned>(in.m->spec->compute_slices)};
  return kSuccess;
}

// The one compute instance takes every slice: no room for another.
NVML_EXPORT Return nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_st* gi,
                                                                      unsigned profile, unsigned* count) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (count == nullptr || profile > 7) return kErrorInvalidArgument;
  *count = 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_st* gi,
                                                                       unsigned profile,
                                                                       abi::Placement* placements,
                                                                       unsigned* count) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (count == nullptr || profile > 7) return kErrorInvalidArgument;
  int gi_slices = in.m->spec->compute_slices;
  int slices = ComputeSlicesOf(profile, gi_slices);
  if (slices == 0) return kErrorNotSupported;
  // Every start at a multiple of its size that leaves it within the instance.
  unsigned possible = static_cast<unsigned>(gi_slices / slices);
  if (placements == nullptr || *count < possible) {
    *count = possible;
    return placements == nullptr ? kSuccess : kErrorInsufficientSize;
  }
  for (unsigned i = 0; i < possible; ++i)
    placements[i] = {i * static_cast<unsigned>(slices), static_cast<unsigned>(slices)};
  *count = possible;
  return kSuccess;
}

NVML_EXPORT Return nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_st* gi, unsigned profile,
                                                        nvmlComputeInstance_st** ci) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (ci == nullptr || profile > 7) return kErrorInvalidArgument;
  return IsRoot() ? kErrorInsufficientResources : kErrorNoPermission;  // Its one compute instance spans it.
}

NVML_EXPORT Return nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_st* gi, unsigned profile,
                                                                     const abi::Placement* placement,
                                                                     nvmlComputeInstance_st** ci) {
  Instance in = OpenGpuInstance(gi);
  if (in.d.r != kSuccess) return in.d.r;
  if (ci == nullptr || placement == nullptr || profile > 7) return kErrorInvalidArgument;
  return IsRoot() ? kErrorInsufficientResources : kErrorNoPermission;
}

NVML_EXPORT Return nvmlComputeInstanceDestroy(nvmlComputeInstance_st* ci) {
  Instance in = OpenComputeInstance(ci);
  if (in.d.r != kSuccess) return in.d.r;
  if (!IsRoot()) return kErrorNoPermission;
  return InUse(in) ? kErrorInUse : kErrorNotSupported;
}
