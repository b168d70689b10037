// SPDX-License-Identifier: Apache-2.0
#include "nvidia/gpu_models.h"

namespace tarmac::nvidia {

int ExpectedNvlinkLinks(std::string_view model) {
  auto has = [&](std::string_view part) { return model.find(part) != std::string_view::npos; };
  if (has("PCIe") || has("NVL")) return 0;
  if (has("H100") || has("H200")) return 18;
  if (has("A100")) return 12;
  return 0;
}

}  // namespace tarmac::nvidia
