// SPDX-License-Identifier: Apache-2.0
//
// Which pod the kubelet allocated each GPU to, from its pod-resources API
// (proto/podresources.proto): List, called on the agent's own schedule with
// a deadline and cached, so that no scrape ever waits on the kubelet. This
// names the pods of GPUs that run no process, the idle allocations that
// process-based attribution cannot see.
//
// Thread safety: Latest and the stats from any thread; Start/Stop from one.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/log.h"
#include "common/mutex.h"
#include "common/result.h"
#include "kube/kube_config.h"
#include "node/process_details.h"

namespace tarmac::kube {

// Device ID (GPU UUID) -> the pod and container it is allocated to.
using PodAllocations = std::map<std::string, node::KubernetesNames>;

// One List call on `socket`, keeping the devices of `resource_name` and of
// the mixed MIG strategy's resources of its domain (`nvidia.com/mig-*`).
// kUnavailable (naming the socket) when the kubelet does not answer within
// `timeout`.
Result<PodAllocations> ListPodResources(const std::string& socket, const std::string& resource_name,
                                        std::chrono::milliseconds timeout);

class PodResourcesWatch {
 public:
  // `on_list` runs on the watch's thread after each successful List.
  PodResourcesWatch(KubeOptions options, std::function<void(const PodAllocations&)> on_list, Logger* logger);
  ~PodResourcesWatch() { Stop(); }
  PodResourcesWatch(const PodResourcesWatch&) = delete;
  PodResourcesWatch& operator=(const PodResourcesWatch&) = delete;

  // Lists at once, then every pod_resources_interval.
  void Start();
  void Stop();
  // Lists now, on the caller's thread.
  void ListNow() EXCLUDES(mu_);

  // The allocations of the last successful List (empty before one).
  std::shared_ptr<const PodAllocations> Latest() const EXCLUDES(mu_);
  // "" when the last List worked; otherwise why it did not.
  std::string Problem() const EXCLUDES(mu_);
  int64_t lists() const EXCLUDES(mu_);
  // Whether it lists at all (a pod-resources socket is configured).
  bool is_listing() const { return !options_.pod_resources_socket.empty(); }

 private:
  KubeOptions options_;
  std::function<void(const PodAllocations&)> on_list_;
  Logger* logger_;
  std::jthread thread_;
  std::condition_variable_any wake_;
  mutable Mutex mu_;
  std::shared_ptr<const PodAllocations> latest_ GUARDED_BY(mu_) = std::make_shared<const PodAllocations>();
  std::string problem_ GUARDED_BY(mu_);
  int64_t lists_ GUARDED_BY(mu_) = 0;
};

}  // namespace tarmac::kube
