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
using namespace tarmac;             // NOLINT: one ABI shim.
using namespace tarmac::fakenvml;   // NOLINT
}  // namespace

NVML_EXPORT Return nvmlInit_v2() { return Fake().Init(); }
NVML_EXPORT Return nvmlInit() { return Fake().Init(); }
NVML_EXPORT Return nvmlInitWithFlags(unsigned /*flags*/) { return Fake().Init(); }
NVML_EXPORT Return nvmlShutdown() { return Fake().Shutdown(); }
NVML_EXPORT const char* nvmlErrorString(Return code) { return fakenvml::ErrorString(code); }

NVML_EXPORT Return nvmlSystemGetDriverVersion(char* version, unsigned length) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  return CopyString(w->scenario().driver_version, version, length);
}

NVML_EXPORT Return nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  return CopyString(w->scenario().nvml_version, version, length);
}

NVML_EXPORT Return nvmlSystemGetCudaDriverVersion(int* version) {
  sim::World* w = Fake().world();
  if (w == nullptr) return kErrorUninitialized;
  if (version == nullptr) return kErrorInvalidArgument;
  *version = w->scenario().cuda_driver_version;
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
