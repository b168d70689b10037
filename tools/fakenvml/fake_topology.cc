// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): PCIe, NVLink, topology.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/cpu_list.h"
#include "fake_device.h"

namespace {
using namespace tarmac;            // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;  // NOLINT
}  // namespace

NVML_EXPORT Return nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_st* device, unsigned* gen) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (gen == nullptr) return kErrorInvalidArgument;
  *gen = static_cast<unsigned>(d.g->pcie_generation);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_st* device, unsigned* width) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (width == nullptr) return kErrorInvalidArgument;
  *width = static_cast<unsigned>(d.g->pcie_width);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_st* device, unsigned* gen) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (gen == nullptr) return kErrorInvalidArgument;
  *gen = static_cast<unsigned>(d.spec->pcie_generation);
  return kSuccess;
}
NVML_EXPORT Return nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_st* device, unsigned* gen) {
  return nvmlDeviceGetMaxPcieLinkGeneration(device, gen);
}
NVML_EXPORT Return nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_st* device, unsigned* width) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (width == nullptr) return kErrorInvalidArgument;
  *width = static_cast<unsigned>(d.spec->pcie_width);
  return kSuccess;
}

// The driver samples this over 20 ms; the fake answers at once.
NVML_EXPORT Return nvmlDeviceGetPcieThroughput(nvmlDevice_st* device, int counter, unsigned* kbps) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "pcie_counters")) return kErrorNotSupported;
  if (kbps == nullptr) return kErrorInvalidArgument;
  if (counter == kPcieUtilTxBytes)
    *kbps = static_cast<unsigned>(d.g->pcie_tx_kilobytes_per_second);
  else if (counter == kPcieUtilRxBytes)
    *kbps = static_cast<unsigned>(d.g->pcie_rx_kilobytes_per_second);
  else
    return kErrorInvalidArgument;
  return kSuccess;
}

// Defined in fake_ras.cc.
extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetEccMode(nvmlDevice_st* device, int* current, int* pending);
extern "C" tarmac::gpu::nvml::Return nvmlDeviceGetRemappedRows(nvmlDevice_st* device, unsigned* corrected,
                                                               unsigned* uncorrected, unsigned* pending,
                                                               unsigned* failure);

namespace {
// Field IDs tarmac's backend does not read, answered from the direct call
// that reports the same fact, so the two agree (nvml.h: NVML_FI_DEV_*).
constexpr unsigned kFieldEccCurrent = 1;         // NVML_FI_DEV_ECC_CURRENT
constexpr unsigned kFieldEccPending = 2;         // NVML_FI_DEV_ECC_PENDING
constexpr unsigned kFieldRemappedCor = 142;      // NVML_FI_DEV_REMAPPED_COR
constexpr unsigned kFieldRemappedFailure = 145;  // ..._UNC 143, _PENDING 144, _FAILURE 145

// One field value of `d` (the GPU behind `device`), its return in it.
void FillField(nvmlDevice_st* device, const Dev& d, FieldValue* value) {
  FieldValue& v = *value;
  // An unsigned 64-bit count when the GPU has it, else NOT_SUPPORTED.
  auto count = [&](bool has, int64_t n) {
    if (has)
      v.value.ullVal = static_cast<unsigned long long>(n);
    else
      v.nvmlReturn = kErrorNotSupported;
  };
  const bool has_nvlink = !d.g->nvlink_active.empty();
  switch (v.fieldId) {
    case kFieldPcieCountTxBytes:
      count(!Unsupported(d, "pcie_counters"), d.g->pcie_tx_bytes);
      break;
    case kFieldPcieCountRxBytes:
      count(!Unsupported(d, "pcie_counters"), d.g->pcie_rx_bytes);
      break;
    case kFieldTotalEnergyConsumption:
      count(!Unsupported(d, "energy"), d.g->energy_millijoules);
      break;
    case kFieldNvlinkLinkCount:
      count(has_nvlink, static_cast<int64_t>(d.g->nvlink_active.size()));
      break;
    case kFieldNvlinkCrcDataErrorsTotal:
      count(has_nvlink, d.g->nvlink_crc_errors);
      break;
    case kFieldNvlinkReplayErrorsTotal:
      count(has_nvlink, d.g->nvlink_replay_errors);
      break;
    case kFieldNvlinkRecoveryErrorsTotal:
      count(has_nvlink, d.g->nvlink_recovery_errors);
      break;
    case kFieldRetiredSingleBit:
    case kFieldRetiredDoubleBit:
    case kFieldRetiredPending:
      // Boards that remap rows (Ampere and newer) retire no pages.
      count(d.spec->has_ecc && !d.spec->has_remapped_rows && !Unsupported(d, "ecc"),
            v.fieldId == kFieldRetiredSingleBit   ? d.g->retired_pages_single_bit
            : v.fieldId == kFieldRetiredDoubleBit ? d.g->retired_pages_double_bit
                                                  : (d.g->is_retire_pending ? 1 : 0));
      break;
    case kFieldPcieReplayCounter:
      count(!Unsupported(d, "pcie_counters"), d.g->pcie_replays);
      break;
    case kFieldMemoryTemp:  // The simulated HBM runs 5 C above the GPU.
      v.valueType = kValueTypeUnsignedInt;
      if (Unsupported(d, "temperature"))
        v.nvmlReturn = kErrorNotSupported;
      else
        v.value.uiVal = static_cast<unsigned>(d.g->temperature_celsius + 5);
      break;
    case kFieldNvlinkThroughputDataTx:
    case kFieldNvlinkThroughputDataRx:  // The world moves no data over NVLink.
      count(has_nvlink, 0);
      break;
    case kFieldEccCurrent:
    case kFieldEccPending: {
      v.valueType = kValueTypeUnsignedInt;
      int current = 0, pending = 0;
      v.nvmlReturn = nvmlDeviceGetEccMode(device, &current, &pending);
      v.value.uiVal = static_cast<unsigned>(v.fieldId == kFieldEccCurrent ? current : pending);
      break;
    }
    default:
      if (v.fieldId >= kFieldRemappedCor && v.fieldId <= kFieldRemappedFailure) {
        v.valueType = kValueTypeUnsignedInt;
        unsigned rows[4] = {};
        v.nvmlReturn = nvmlDeviceGetRemappedRows(device, &rows[0], &rows[1], &rows[2], &rows[3]);
        v.value.uiVal = rows[v.fieldId - kFieldRemappedCor];
        break;
      }
      v.nvmlReturn = kErrorNotSupported;
      break;
  }
}

}  // namespace

NVML_EXPORT Return nvmlDeviceGetFieldValues(nvmlDevice_st* device, int count, FieldValue* values) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (values == nullptr || count < 0) return kErrorInvalidArgument;
  long long now_us = static_cast<long long>(Micros(d.state->evaluated_at));
  for (int i = 0; i < count; ++i) {
    FieldValue& v = values[i];
    v.timestamp = now_us;
    v.latencyUsec = 0;
    v.valueType = kValueTypeUnsignedLongLong;
    v.nvmlReturn = kSuccess;
    FillField(device, d, &v);
  }
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetNvLinkState(nvmlDevice_st* device, unsigned link, int* active) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (active == nullptr) return kErrorInvalidArgument;
  if (d.spec->nvlink_peers.empty()) return kErrorNotSupported;
  if (link >= d.g->nvlink_active.size()) return kErrorInvalidArgument;
  *active = d.g->nvlink_active[link] ? 1 : 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetPcieReplayCounter(nvmlDevice_st* device, unsigned* value) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "pcie_counters")) return kErrorNotSupported;
  if (value == nullptr) return kErrorInvalidArgument;
  *value = static_cast<unsigned>(d.g->pcie_replays);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_st* device, unsigned link, PciInfo* pci) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (pci == nullptr) return kErrorInvalidArgument;
  if (d.spec->nvlink_peers.empty() || link >= d.g->nvlink_active.size()) return kErrorInvalidArgument;
  // Link i joins the i-th peer, round robin (sim::NvlinkLinkCount).
  return nvmlDeviceGetPciInfo_v3(Fake().Handle(d.spec->nvlink_peers[link % d.spec->nvlink_peers.size()]),
                                 pci);
}

NVML_EXPORT Return nvmlDeviceGetNumaNodeId(nvmlDevice_st* device, unsigned* node) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (Unsupported(d, "numa_node") || d.spec->numa_node < 0) return kErrorNotSupported;
  if (node == nullptr) return kErrorInvalidArgument;
  *node = static_cast<unsigned>(d.spec->numa_node);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetCpuAffinity(nvmlDevice_st* device, unsigned size, unsigned long* set) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (set == nullptr || size == 0) return kErrorInvalidArgument;
  Result<std::vector<uint64_t>> mask = ParseCpuList(d.spec->cpus);
  if (!mask.ok()) return kErrorNotSupported;
  for (unsigned i = 0; i < size; ++i) set[i] = i < mask.value().size() ? mask.value()[i] : 0;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_st* a, nvmlDevice_st* b, int* level) {
  Dev da = Open(a);
  if (da.r != kSuccess) return da.r;
  Dev db = Open(b);
  if (db.r != kSuccess) return db.r;
  if (level == nullptr) return kErrorInvalidArgument;
  if (da.index == db.index)
    *level = 0;  // INTERNAL
  else if (da.spec->numa_node == db.spec->numa_node)
    *level = 40;  // NODE
  else
    *level = 50;  // SYSTEM
  return kSuccess;
}
