// SPDX-License-Identifier: Apache-2.0
//
// NVIDIA's fixed facts outside NVML: how its devices show on the PCI bus,
// in /dev and in cgroup device rules, and the variables that name GPUs to
// CUDA programs and containers. Every module that needs one reads it here,
// so a second vendor is one module beside this one.
#pragma once

#include <string_view>

namespace tarmac::nvidia {

// /sys/bus/pci/devices/*/vendor of an NVIDIA function.
inline constexpr std::string_view kPciVendorId = "0x10de";

// The kernel driver bound to a GPU the host uses (vfio-pci when passed to
// a virtual machine).
inline constexpr std::string_view kKernelDriver = "nvidia";

// Character major of /dev/nvidiaN (N is NVML's minor number) and of
// /dev/nvidiactl (minor 255), as cgroup device rules name them:
// "c 195:3 rwm".
inline constexpr int kDeviceMajor = 195;
inline constexpr int kControlDeviceMinor = 255;
// /dev/nvidia-modeset's minor; a GPU's (/dev/nvidiaN) is below it.
inline constexpr int kModesetDeviceMinor = 254;
inline constexpr std::string_view kDeviceRulePrefix = "c 195:";

// The GPUs a CUDA program may use, by index or UUID, and the same for the
// NVIDIA container runtime.
inline constexpr std::string_view kVisibleDevicesVariable = "CUDA_VISIBLE_DEVICES";
inline constexpr std::string_view kContainerVisibleDevicesVariable = "NVIDIA_VISIBLE_DEVICES";

// A MIG device's UUID begins "MIG-" (a whole GPU's "GPU-").
inline constexpr std::string_view kMigUuidPrefix = "MIG-";
inline bool IsMigUuid(std::string_view uuid) {
  return uuid.substr(0, kMigUuidPrefix.size()) == kMigUuidPrefix;
}

}  // namespace tarmac::nvidia
