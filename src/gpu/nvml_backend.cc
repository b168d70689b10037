// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_backend.h"

#include <fmt/format.h>

#include <cstdlib>

namespace tarmac::gpu {

using nvml::Return;

NvmlBackend::NvmlBackend(NvmlOptions options, Clock* clock, Logger* logger)
    : options_(std::move(options)), clock_(clock), logger_(logger) {}

NvmlBackend::~NvmlBackend() {
  if (library_ == nullptr) return;
  if (has_event_set_ && library_->api().EventSetFree != nullptr) {
    library_->api().EventSetFree(event_set_);
  }
  for (DeviceState& d : devices_) FreeGpmSamples(d);
  if (is_initialized_) library_->api().Shutdown();
}

Status NvmlBackend::InitLibrary() {
  std::string path = options_.library_path;
  if (path.empty()) {
    if (const char* env = std::getenv("TARMAC_NVML_LIBRARY"); env != nullptr) path = env;
  }
  Result<std::unique_ptr<nvml::Library>> library = nvml::Library::Load(path);
  if (!library.ok()) return library.status();
  library_ = std::move(library).value();
  logger_->Log(LogLevel::kInfo, "nvml: loaded {}", library_->path());
  const nvml::Api& api = library_->api();
  // NO_GPUS lets tarmac start on a node whose GPUs are absent or failing.
  const char* call = api.InitWithFlags != nullptr ? "nvmlInitWithFlags" : "nvmlInit_v2";
  Return r = api.InitWithFlags != nullptr ? api.InitWithFlags(nvml::kInitFlagNoGpus) : api.InitV2();
  if (r == nvml::kSuccess) {
    is_initialized_ = true;
    return Status::OK();
  }
  std::string what = fmt::format("nvml: {}: {}", call, library_->ErrorText(r));
  switch (r) {
    case nvml::kErrorDriverNotLoaded:
      return Status::Unavailable(what, "the NVIDIA kernel driver is not loaded");
    case nvml::kErrorLibRmVersionMismatch:
      return Status::Unavailable(what,
                                 "the NVML library and the kernel driver are different versions; reboot or "
                                 "reload the nvidia modules");
    case nvml::kErrorNoPermission:
      return Status::PermissionDenied(what, "no permission to open the NVIDIA devices");
    default:
      return Status::Unavailable(what);
  }
}

bool NvmlBackend::Check(DeviceState& d, int index, NvmlField field, const char* call, Return r) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kErrorNotSupported || r == nvml::kErrorFunctionNotFound) {
    if (Supported(d, field)) {
      logger_->Log(LogLevel::kInfo, "nvml: {}(gpu {}): not supported; field left empty", call, index);
    }
    d.unsupported[static_cast<size_t>(field)] = true;
    return false;
  }
  int64_t count = 0;
  {
    MutexLock lock(&errors_mu_);
    count = error_counts_[node::CallError{call, nvml::ReturnName(r)}]++;
  }
  if (r == nvml::kErrorDriverNotLoaded) {
    d.health = node::GpuHealth::kDriverNotLoaded;
    d.error = fmt::format("nvml: {}(gpu {}): {}", call, index, library_->ErrorText(r));
    return false;
  }
  if (r == nvml::kErrorGpuIsLost) {
    d.health = node::GpuHealth::kLost;
    d.error = fmt::format("nvml: {}(gpu {}): {}", call, index, library_->ErrorText(r));
    return false;
  }
  if (count == 0) {
    logger_->Log(LogLevel::kWarning, "nvml: {}(gpu {}): {}", call, index, library_->ErrorText(r));
  }
  return false;
}

node::CallErrorCounts NvmlBackend::CallErrors() const {
  MutexLock lock(&errors_mu_);
  return error_counts_;
}
}  // namespace tarmac::gpu
