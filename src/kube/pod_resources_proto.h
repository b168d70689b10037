// SPDX-License-Identifier: Apache-2.0
//
// The kubelet's pod-resources answer (proto/podresources.proto) as
// tarmac's PodAllocations. Pure; the one place that reads the message.
#pragma once

#include <string>

#include "kube/pod_resources.h"
#include "podresources.pb.h"

namespace tarmac::kube {

// The devices of `resource_name` in `response`, each with its pod's name
// and namespace and its container's name. A device listed twice (which a
// kubelet never does) keeps the first listing.
PodAllocations AllocationsOf(const v1::ListPodResourcesResponse& response, const std::string& resource_name);

}  // namespace tarmac::kube
