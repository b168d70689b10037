// SPDX-License-Identifier: Apache-2.0
//
// The fake libnvidia-ml (README.md here says what it is): init and system.
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

NVML_EXPORT Return nvmlInit_v2() { return Fake().Init(); }
NVML_EXPORT Return nvmlInit() { return Fake().Init(); }
NVML_EXPORT Return nvmlInitWithFlags(unsigned /*flags*/) { return Fake().Init(); }
NVML_EXPORT Return nvmlShutdown() { return Fake().Shutdown(); }
NVML_EXPORT const char* nvmlErrorString(Return code) { return fakenvml::ErrorString(code); }

#ifdef TARMAC_FAKE_LEGACY
// The legacy build is an R470 driver: old enough to lack every symbol it
// leaves out (memory v2 and the _v2/_v3 process lists came in R510, GPM in
// R520, clock event reasons in R535, TemperatureV in R550).
constexpr const char* kLegacyDriverVersion = "470.256.02";
constexpr const char* kLegacyNvmlVersion = "11.470.256.02";
#endif

NVML_EXPORT Return nvmlSystemGetDriverVersion(char* version, unsigned length) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
#ifdef TARMAC_FAKE_LEGACY
  return CopyString(kLegacyDriverVersion, version, length);
#else
  return CopyString(w->scenario().driver_version, version, length);
#endif
}

NVML_EXPORT Return nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
#ifdef TARMAC_FAKE_LEGACY
  return CopyString(kLegacyNvmlVersion, version, length);
#else
  return CopyString(w->scenario().nvml_version, version, length);
#endif
}

NVML_EXPORT Return nvmlSystemGetCudaDriverVersion(int* version) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (version == nullptr) return kErrorInvalidArgument;
#ifdef TARMAC_FAKE_LEGACY
  *version = 11040;  // CUDA 11.4, as R470 reports.
#else
  *version = w->scenario().cuda_driver_version;
#endif
  return kSuccess;
}

NVML_EXPORT Return nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

NVML_EXPORT Return nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length) {
  if (Fake().world() == nullptr) return kErrorUninitialized;
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  if (!std::getline(in, comm)) return kErrorNotFound;
  return CopyString(comm, name, length);
}
