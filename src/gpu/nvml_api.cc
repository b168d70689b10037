// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_api.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

namespace tarmac::gpu::nvml {
namespace {

// Looks up `symbol` and stores it in *slot (null when absent).
template <typename Fn>
bool Resolve(void* library, const char* symbol, Fn* slot) {
  dlerror();  // Clear any stale error before the lookup.
  void* address = dlsym(library, symbol);
  *slot = reinterpret_cast<Fn>(address);
  return address != nullptr;
}

std::string ResolvedPath(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

// Every symbol tarmac can do without, each left null where the library
// lacks it (an older driver): callers check before calling.
void ResolveOptional(void* handle, Api* api) {
  Api& a = *api;
  Resolve(handle, "nvmlInitWithFlags", &a.InitWithFlags);
  Resolve(handle, "nvmlSystemGetDriverVersion", &a.SystemGetDriverVersion);
  Resolve(handle, "nvmlSystemGetNVMLVersion", &a.SystemGetNVMLVersion);
  Resolve(handle, "nvmlSystemGetCudaDriverVersion", &a.SystemGetCudaDriverVersion);
  Resolve(handle, "nvmlDeviceGetName", &a.DeviceGetName);
  Resolve(handle, "nvmlDeviceGetUUID", &a.DeviceGetUUID);
  Resolve(handle, "nvmlDeviceGetSerial", &a.DeviceGetSerial);
  Resolve(handle, "nvmlDeviceGetPciInfo_v3", &a.DeviceGetPciInfoV3);
  Resolve(handle, "nvmlDeviceGetMinorNumber", &a.DeviceGetMinorNumber);
  Resolve(handle, "nvmlDeviceGetUtilizationRates", &a.DeviceGetUtilizationRates);
  Resolve(handle, "nvmlDeviceGetEncoderUtilization", &a.DeviceGetEncoderUtilization);
  Resolve(handle, "nvmlDeviceGetDecoderUtilization", &a.DeviceGetDecoderUtilization);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", &a.DeviceGetMemoryInfo);
  Resolve(handle, "nvmlDeviceGetMemoryInfo_v2", &a.DeviceGetMemoryInfoV2);
  Resolve(handle, "nvmlDeviceGetPowerUsage", &a.DeviceGetPowerUsage);
  Resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", &a.DeviceGetEnforcedPowerLimit);
  Resolve(handle, "nvmlDeviceGetPowerManagementDefaultLimit", &a.DeviceGetPowerManagementDefaultLimit);
  Resolve(handle, "nvmlDeviceGetTotalEnergyConsumption", &a.DeviceGetTotalEnergyConsumption);
  Resolve(handle, "nvmlDeviceGetTemperature", &a.DeviceGetTemperature);
  Resolve(handle, "nvmlDeviceGetTemperatureV", &a.DeviceGetTemperatureV);
  Resolve(handle, "nvmlDeviceGetTemperatureThreshold", &a.DeviceGetTemperatureThreshold);
  Resolve(handle, "nvmlDeviceGetFanSpeed", &a.DeviceGetFanSpeed);
  Resolve(handle, "nvmlDeviceGetPerformanceState", &a.DeviceGetPerformanceState);
  Resolve(handle, "nvmlDeviceGetClockInfo", &a.DeviceGetClockInfo);
  Resolve(handle, "nvmlDeviceGetMaxClockInfo", &a.DeviceGetMaxClockInfo);
  Resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", &a.DeviceGetCurrentClocksEventReasons);
  Resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", &a.DeviceGetCurrentClocksThrottleReasons);
  Resolve(handle, "nvmlDeviceGetPersistenceMode", &a.DeviceGetPersistenceMode);
  Resolve(handle, "nvmlDeviceGetMigMode", &a.DeviceGetMigMode);
  Resolve(handle, "nvmlDeviceIsMigDeviceHandle", &a.DeviceIsMigDeviceHandle);
  Resolve(handle, "nvmlDeviceGetMaxMigDeviceCount", &a.DeviceGetMaxMigDeviceCount);
  Resolve(handle, "nvmlDeviceGetMigDeviceHandleByIndex", &a.DeviceGetMigDeviceHandleByIndex);
  Resolve(handle, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
          &a.DeviceGetDeviceHandleFromMigDeviceHandle);
  Resolve(handle, "nvmlDeviceGetGpuInstanceId", &a.DeviceGetGpuInstanceId);
  Resolve(handle, "nvmlDeviceGetComputeInstanceId", &a.DeviceGetComputeInstanceId);
  Resolve(handle, "nvmlDeviceGetVirtualizationMode", &a.DeviceGetVirtualizationMode);
  Resolve(handle, "nvmlDeviceGetGridLicensableFeatures_v3", &a.DeviceGetGridLicensableFeaturesV3);
  Resolve(handle, "nvmlDeviceGetTotalEccErrors", &a.DeviceGetTotalEccErrors);
  Resolve(handle, "nvmlDeviceGetRemappedRows", &a.DeviceGetRemappedRows);
  Resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", &a.DeviceGetCurrPcieLinkGeneration);
  Resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", &a.DeviceGetCurrPcieLinkWidth);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", &a.DeviceGetMaxPcieLinkGeneration);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", &a.DeviceGetMaxPcieLinkWidth);
  Resolve(handle, "nvmlDeviceGetFieldValues", &a.DeviceGetFieldValues);
  Resolve(handle, "nvmlDeviceGetNvLinkState", &a.DeviceGetNvLinkState);
  Resolve(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &a.DeviceGetNvLinkRemotePciInfoV2);
  Resolve(handle, "nvmlDeviceGetNumaNodeId", &a.DeviceGetNumaNodeId);
  Resolve(handle, "nvmlDeviceGetCpuAffinity", &a.DeviceGetCpuAffinity);
  Resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", &a.DeviceGetComputeRunningProcessesV3);
  Resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v2", &a.DeviceGetComputeRunningProcessesV2);
  Resolve(handle, "nvmlDeviceGetComputeRunningProcesses", &a.DeviceGetComputeRunningProcesses);
  Resolve(handle, "nvmlDeviceGetGraphicsRunningProcesses_v3", &a.DeviceGetGraphicsRunningProcessesV3);
  Resolve(handle, "nvmlDeviceGetGraphicsRunningProcesses_v2", &a.DeviceGetGraphicsRunningProcessesV2);
  Resolve(handle, "nvmlDeviceGetGraphicsRunningProcesses", &a.DeviceGetGraphicsRunningProcesses);
  Resolve(handle, "nvmlDeviceGetProcessUtilization", &a.DeviceGetProcessUtilization);
  Resolve(handle, "nvmlDeviceGetSamples", &a.DeviceGetSamples);
  Resolve(handle, "nvmlEventSetCreate", &a.EventSetCreate);
  Resolve(handle, "nvmlDeviceRegisterEvents", &a.DeviceRegisterEvents);
  Resolve(handle, "nvmlDeviceGetSupportedEventTypes", &a.DeviceGetSupportedEventTypes);
  Resolve(handle, "nvmlEventSetWait_v2", &a.EventSetWaitV2);
  Resolve(handle, "nvmlEventSetFree", &a.EventSetFree);
  Resolve(handle, "nvmlGpmQueryDeviceSupport", &a.GpmQueryDeviceSupport);
  Resolve(handle, "nvmlGpmSampleAlloc", &a.GpmSampleAlloc);
  Resolve(handle, "nvmlGpmSampleFree", &a.GpmSampleFree);
  Resolve(handle, "nvmlGpmSampleGet", &a.GpmSampleGet);
  Resolve(handle, "nvmlGpmMigSampleGet", &a.GpmMigSampleGet);
  Resolve(handle, "nvmlGpmMetricsGet", &a.GpmMetricsGet);
  Resolve(handle, "nvmlDeviceGetConfComputeMemSizeInfo", &a.DeviceGetConfComputeMemSizeInfo);
  Resolve(handle, "nvmlDeviceGetRunningProcessDetailList", &a.DeviceGetRunningProcessDetailList);
}

}  // namespace

Result<std::unique_ptr<Library>> Library::Load(const std::string& explicit_path) {
  std::vector<std::string> candidates;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);
  } else {
    // The versioned name first: the unversioned one may be the CUDA toolkit's
    // stub, which loads but finds no GPUs.
    candidates = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  }
  std::string tried;
  void* handle = nullptr;
  std::string name;
  for (const std::string& candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      name = candidate;
      break;
    }
    const char* why = dlerror();
    tried +=
        fmt::format("{}{} ({})", tried.empty() ? "" : "; ", candidate, why != nullptr ? why : "not found");
  }
  if (handle == nullptr) {
    return Status::Unavailable("nvml: cannot load the NVIDIA management library",
                               fmt::format("tried {}", tried));
  }
  std::unique_ptr<Library> lib(new Library(handle, ResolvedPath(handle, name)));
  Api& a = lib->api_;
  const char* missing = nullptr;
  auto required = [&](const char* symbol, auto* slot) {
    if (!Resolve(handle, symbol, slot) && missing == nullptr) missing = symbol;
  };
  required("nvmlInit_v2", &a.InitV2);
  required("nvmlShutdown", &a.Shutdown);
  required("nvmlErrorString", &a.ErrorString);
  required("nvmlDeviceGetCount_v2", &a.DeviceGetCountV2);
  required("nvmlDeviceGetHandleByIndex_v2", &a.DeviceGetHandleByIndexV2);
  if (missing != nullptr) {
    return Status::Unavailable(fmt::format("nvml: {} lacks required symbol", lib->path_), missing);
  }
  ResolveOptional(handle, &a);
  return lib;
}

Library::~Library() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string ReturnName(Return code) {
  switch (code) {
    case kSuccess:
      return "SUCCESS";
    case kErrorUninitialized:
      return "UNINITIALIZED";
    case kErrorInvalidArgument:
      return "INVALID_ARGUMENT";
    case kErrorNotSupported:
      return "NOT_SUPPORTED";
    case kErrorNoPermission:
      return "NO_PERMISSION";
    case kErrorNotFound:
      return "NOT_FOUND";
    case kErrorInsufficientSize:
      return "INSUFFICIENT_SIZE";
    case kErrorDriverNotLoaded:
      return "DRIVER_NOT_LOADED";
    case kErrorTimeout:
      return "TIMEOUT";
    case kErrorLibraryNotFound:
      return "LIBRARY_NOT_FOUND";
    case kErrorFunctionNotFound:
      return "FUNCTION_NOT_FOUND";
    case kErrorGpuIsLost:
      return "GPU_IS_LOST";
    case kErrorLibRmVersionMismatch:
      return "LIB_RM_VERSION_MISMATCH";
    case kErrorArgumentVersionMismatch:
      return "ARGUMENT_VERSION_MISMATCH";
    case kErrorUnknown:
      return "UNKNOWN";
    default:
      return fmt::format("CODE_{}", code);
  }
}

std::string Library::ErrorText(Return code) const {
  const char* text = api_.ErrorString != nullptr ? api_.ErrorString(code) : nullptr;
  if (text == nullptr || text[0] == '\0') return fmt::format("unknown error {}", code);
  return text;
}

}  // namespace tarmac::gpu::nvml
