// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): the board's own
// facts a client may look up, answered from the simulated GPU: BAR1
// memory, VBIOS, InfoROM and part number, board ids, supported clocks,
// violation time, retired pages, accounting, P2P status and the GPUs
// nearest to one.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "common/cpu_list.h"
#include "fake_abi.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
namespace abi = tarmac::fakenvml::abi;

bool IsHopper(const sim::GpuSpec& spec) {
  return spec.model.find("H100") != std::string::npos || spec.model.find("H200") != std::string::npos;
}

// Ampere and newer retire rows by remapping, not pages: the driver answers
// NOT_SUPPORTED for retired pages there (every model the fake knows).
bool RetiresPages(const sim::GpuSpec& spec) {
  return spec.model.find("V100") != std::string::npos || spec.model.find("T4") != std::string::npos;
}

// The board family's code, as part numbers and InfoROM images carry it.
std::string BoardCode(const sim::GpuSpec& spec) {
  if (spec.model.find("H200") != std::string::npos) return "G525";
  if (IsHopper(spec)) return "G520";
  if (spec.model.find("A100") != std::string::npos) return "G506";
  return "G500";
}

// Writes `values` with the size protocol most list calls follow: a count
// too small (or a NULL array) is INSUFFICIENT_SIZE, with the count needed.
template <typename T>
Return WriteList(const std::vector<T>& values, unsigned* count, T* out) {
  if (count == nullptr) return kErrorInvalidArgument;
  if (out == nullptr || *count < values.size()) {
    *count = static_cast<unsigned>(values.size());
    return values.empty() ? kSuccess : kErrorInsufficientSize;
  }
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  *count = static_cast<unsigned>(values.size());
  return kSuccess;
}

// Writes `values` with the topology calls' protocol (NVML API reference,
// nvmlDeviceGetTopologyNearestGpus, nvmlSystemGetTopologyGpuSet): a count
// of 0 asks for the size and is answered SUCCESS with it; any other count
// is filled with at most that many, and set to how many were written.
template <typename T>
Return WriteCountedList(const std::vector<T>& values, unsigned* count, T* out) {
  if (count == nullptr) return kErrorInvalidArgument;
  if (*count == 0) {
    *count = static_cast<unsigned>(values.size());
    return kSuccess;
  }
  if (out == nullptr) return kErrorInvalidArgument;
  unsigned n = std::min(*count, static_cast<unsigned>(values.size()));
  for (unsigned i = 0; i < n; ++i) out[i] = values[i];
  *count = n;
  return kSuccess;
}

}  // namespace

// BAR1 is the power of two at or above the board's memory (128 GiB on an
// 80 GiB H100); the driver maps a little of it, and 2 MiB per process. A
// MIG device has its memory slices' share of it (nvidia-smi's MIG table
// shows BAR1 per MIG device: 16 GiB for a 1g.10gb of an 80 GiB GPU), with
// 2 MiB for each process in it.
NVML_EXPORT Return nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_st* device, abi::Bar1Memory* bar1) {
  const bool is_mig = Fake().IsMigHandle(device);
  MigDev md = is_mig ? OpenMig(device) : MigDev{Open(device), nullptr};
  const Dev& d = md.d;
  if (d.r != kSuccess) return d.r;
  if (bar1 == nullptr) return kErrorInvalidArgument;
  unsigned long long total = 1ull << 28;
  while (total < static_cast<unsigned long long>(d.spec->memory_total_bytes)) total <<= 1;
  size_t processes = d.g->processes.size();
  if (is_mig) {
    total =
        total / nvidia::kMigMemorySlices * static_cast<unsigned long long>(MigMemorySlices(*d.spec, *md.m));
    processes = 0;
    for (const sim::ProcessState& p : d.g->processes)
      processes += p.gpu_instance_id == md.m->spec->gpu_instance_id;
  }
  unsigned long long used = (1ull << 21) * (1 + processes);
  bar1->bar1Total = total;
  bar1->bar1Used = used;
  bar1->bar1Free = total - used;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetVbiosVersion(nvmlDevice_st* device, char* version, unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return CopyString(IsHopper(*d.spec) ? "96.00.99.00.01" : "92.00.45.00.06", version, length);
}

NVML_EXPORT Return nvmlDeviceGetBoardPartNumber(nvmlDevice_st* device, char* part, unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return CopyString("692-2" + BoardCode(*d.spec) + "-0200-000", part, length);
}

NVML_EXPORT Return nvmlDeviceGetInforomImageVersion(nvmlDevice_st* device, char* version, unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return CopyString(BoardCode(*d.spec) + ".0200.00.05", version, length);
}

// Objects: 0 OEM, 1 ECC, 2 power (none on these boards).
NVML_EXPORT Return nvmlDeviceGetInforomVersion(nvmlDevice_st* device, int object, char* version,
                                               unsigned length) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (object == 0) return CopyString("2.1", version, length);
  if (object == 1) return d.spec->has_ecc ? CopyString("7.16", version, length) : kErrorNotSupported;
  if (object == 2) return kErrorNotSupported;
  return kErrorInvalidArgument;
}

NVML_EXPORT Return nvmlDeviceGetInforomConfigurationChecksum(nvmlDevice_st* device, unsigned* checksum) {
  return AnswerOne(device, checksum,
                   [](const Dev& d) { return 0x2c5a0000u + static_cast<unsigned>(d.index); });
}

NVML_EXPORT Return nvmlDeviceValidateInforom(nvmlDevice_st* device) {
  Dev d = Open(device);
  return d.r;
}

// One GPU a board, each its own id (its PCI bus number, as drivers derive it).
NVML_EXPORT Return nvmlDeviceGetBoardId(nvmlDevice_st* device, unsigned* board_id) {
  return AnswerOne(device, board_id,
                   [](const Dev& d) { return static_cast<unsigned>(d.spec->pci_bus) << 8; });
}

NVML_EXPORT Return nvmlDeviceGetMultiGpuBoard(nvmlDevice_st* device, unsigned* multi_gpu) {
  return AnswerOne(device, multi_gpu, [](const Dev&) { return 0u; });
}

NVML_EXPORT Return nvmlDeviceOnSameBoard(nvmlDevice_st* a, nvmlDevice_st* b, int* same) {
  Dev da = Open(a);
  if (da.r != kSuccess) return da.r;
  Dev db = Open(b);
  if (db.r != kSuccess) return db.r;
  if (same == nullptr) return kErrorInvalidArgument;
  *same = da.index == db.index ? 1 : 0;
  return kSuccess;
}

// One memory clock, and the graphics clocks from the maximum down to the
// idle clock in 15 MHz steps (as an H100 lists them).
NVML_EXPORT Return nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_st* device, unsigned* count,
                                                      unsigned* clocks_mhz) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  return WriteList(std::vector<unsigned>{static_cast<unsigned>(d.spec->memory_clock_mhz)}, count, clocks_mhz);
}

NVML_EXPORT Return nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_st* device, unsigned memory_clock_mhz,
                                                        unsigned* count, unsigned* clocks_mhz) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (memory_clock_mhz != static_cast<unsigned>(d.spec->memory_clock_mhz)) return kErrorNotFound;
  std::vector<unsigned> clocks;
  for (int mhz = d.spec->sm_clock_max_mhz; mhz >= d.spec->sm_clock_idle_mhz; mhz -= 15) {
    clocks.push_back(static_cast<unsigned>(mhz));
  }
  return WriteList(clocks, count, clocks_mhz);
}

// Policy 1, thermal: the time the scenario's thermal throttles held the
// clocks down, in nanoseconds (nvmlViolationTime_t), which grows while the
// thermal reasons are set. The world keeps no total of the time a load met
// its power limit, so the other policies are NOT_SUPPORTED rather than a
// 0 that the SW_POWER_CAP reason would contradict.
NVML_EXPORT Return nvmlDeviceGetViolationStatus(nvmlDevice_st* device, int policy,
                                                abi::ViolationTime* violation) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (violation == nullptr || policy < 0 || policy > 7) return kErrorInvalidArgument;
  if (policy != 1) return kErrorNotSupported;
  violation->referenceTime = Micros(d.state->evaluated_at);
  violation->violationTime = static_cast<unsigned long long>(d.g->thermal_violation_ms) * 1000000ull;
  return kSuccess;
}

// cause: 0 multiple single-bit ECC errors, 1 a double-bit error.
NVML_EXPORT Return nvmlDeviceGetRetiredPages(nvmlDevice_st* device, int cause, unsigned* count,
                                             unsigned long long* addresses) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (cause < 0 || cause > 1 || count == nullptr) return kErrorInvalidArgument;
  if (!RetiresPages(*d.spec) || !d.spec->has_ecc) return kErrorNotSupported;
  (void)addresses;
  *count = 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetRetiredPages_v2(nvmlDevice_st* device, int cause, unsigned* count,
                                                unsigned long long* addresses,
                                                unsigned long long* timestamps) {
  (void)timestamps;
  return nvmlDeviceGetRetiredPages(device, cause, count, addresses);
}

NVML_EXPORT Return nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_st* device, int* is_pending) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (is_pending == nullptr) return kErrorInvalidArgument;
  if (!RetiresPages(*d.spec) || !d.spec->has_ecc) return kErrorNotSupported;
  *is_pending = 0;
  return kSuccess;
}

// Accounting is on: the processes on the GPU now, with their use.
NVML_EXPORT Return nvmlDeviceGetAccountingMode(nvmlDevice_st* device, int* mode) {
  return AnswerOne(device, mode, [](const Dev&) { return 1; });  // NVML_FEATURE_ENABLED
}

NVML_EXPORT Return nvmlDeviceGetAccountingBufferSize(nvmlDevice_st* device, unsigned* size) {
  return AnswerOne(device, size, [](const Dev&) { return 4000u; });
}

NVML_EXPORT Return nvmlDeviceGetAccountingPids(nvmlDevice_st* device, unsigned* count, unsigned* pids) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  std::vector<unsigned> listed;
  for (const sim::ProcessState& p : d.g->processes) listed.push_back(static_cast<unsigned>(p.pid));
  return WriteList(listed, count, pids);
}

NVML_EXPORT Return nvmlDeviceGetAccountingStats(nvmlDevice_st* device, unsigned pid,
                                                abi::AccountingStats* stats) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (stats == nullptr) return kErrorInvalidArgument;
  for (const sim::ProcessState& p : d.g->processes) {
    if (p.pid != static_cast<int64_t>(pid)) continue;
    std::memset(stats, 0, sizeof *stats);
    stats->gpuUtilization = static_cast<unsigned>(p.sm_utilization_percent);
    stats->memoryUtilization = static_cast<unsigned>(d.g->utilization_memory_percent);
    stats->maxMemoryUsage = static_cast<unsigned long long>(p.used_memory_bytes);
    stats->isRunning = 1;
    return kSuccess;
  }
  return kErrorNotFound;
}

// P2P: over NVLink between peers; over PCIe (read, write, atomics) within
// one NUMA node, else not through this chipset.
NVML_EXPORT Return nvmlDeviceGetP2PStatus(nvmlDevice_st* a, nvmlDevice_st* b, int caps_index, int* status) {
  Dev da = Open(a);
  if (da.r != kSuccess) return da.r;
  Dev db = Open(b);
  if (db.r != kSuccess) return db.r;
  if (status == nullptr || caps_index < 0 || caps_index > abi::kP2pCapsLast) return kErrorInvalidArgument;
  bool is_peer = false;
  for (int p : da.spec->nvlink_peers) is_peer = is_peer || p == db.index;
  bool ok = caps_index == abi::kP2pCapsNvlink ? is_peer : is_peer || da.spec->numa_node == db.spec->numa_node;
  *status = ok ? abi::kP2pStatusOk : abi::kP2pStatusChipsetNotSupported;
  return kSuccess;
}

// The GPUs at or within `level` of `device` (levels as
// nvmlDeviceGetTopologyCommonAncestor gives them: 40 same NUMA node, 50
// system), the device itself left out.
NVML_EXPORT Return nvmlDeviceGetTopologyNearestGpus(nvmlDevice_st* device, int level, unsigned* count,
                                                    nvmlDevice_st** devices) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (level < 0 || level > 50) return kErrorInvalidArgument;
  sim::World* w = Fake().world();
  std::vector<nvmlDevice_st*> near;
  for (const sim::GpuSpec& other : w->scenario().gpus) {
    if (other.index == d.index) continue;
    int distance = other.numa_node == d.spec->numa_node ? 40 : 50;
    if (distance <= level) near.push_back(Fake().Handle(other.index));
  }
  return WriteCountedList(near, count, devices);
}

// The GPUs near CPU `cpu` (in their CPU affinity).
NVML_EXPORT Return nvmlSystemGetTopologyGpuSet(unsigned cpu, unsigned* count, nvmlDevice_st** devices) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  std::vector<nvmlDevice_st*> near;
  for (const sim::GpuSpec& g : w->scenario().gpus) {
    Result<std::vector<uint64_t>> mask = ParseCpuList(g.cpus);
    if (!mask.ok() || cpu / 64 >= mask.value().size()) continue;
    if ((mask.value()[cpu / 64] >> (cpu % 64)) & 1) near.push_back(Fake().Handle(g.index));
  }
  return WriteCountedList(near, count, devices);
}
