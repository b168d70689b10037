// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): ECC and RAS.
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

NVML_EXPORT Return nvmlDeviceGetEccMode(nvmlDevice_st* device, int* current, int* pending) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!d.spec->has_ecc || Unsupported(d, "ecc")) return kErrorNotSupported;
  if (current == nullptr || pending == nullptr) return kErrorInvalidArgument;
  *current = *pending = 1;
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetTotalEccErrors(nvmlDevice_st* device, int type, int counter,
                                               unsigned long long* count) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!d.spec->has_ecc || Unsupported(d, "ecc")) return kErrorNotSupported;
  if (count == nullptr || type < 0 || type > 1 || counter < 0 || counter > 1) {
    return kErrorInvalidArgument;
  }
  *count = static_cast<unsigned long long>(type == kMemoryErrorCorrected ? d.g->ecc_corrected
                                                                         : d.g->ecc_uncorrected);
  return kSuccess;
}

NVML_EXPORT Return nvmlDeviceGetRemappedRows(nvmlDevice_st* device, unsigned* corrected,
                                             unsigned* uncorrected, unsigned* pending, unsigned* failure) {
  Dev d = Open(device);
  if (d.r != kSuccess) return d.r;
  if (!d.spec->has_remapped_rows || Unsupported(d, "remapped_rows") || !d.g->mig_instances.empty()) {
    return kErrorNotSupported;  // Not with MIG instances.
  }
  if (corrected == nullptr || uncorrected == nullptr || pending == nullptr || failure == nullptr) {
    return kErrorInvalidArgument;
  }
  *corrected = static_cast<unsigned>(d.g->remapped_rows_corrected);
  *uncorrected = static_cast<unsigned>(d.g->remapped_rows_uncorrected);
  *pending = d.g->is_remap_pending ? 1 : 0;
  *failure = 0;
  return kSuccess;
}
