// SPDX-License-Identifier: Apache-2.0
#include "kube/pod_resources.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include "common/clock.h"
#include "kube/pod_resources_proto.h"
#include "podresources.grpc.pb.h"

namespace tarmac::kube {

PodAllocations AllocationsOf(const v1::ListPodResourcesResponse& response, const std::string& resource_name) {
  PodAllocations out;
  // The mixed MIG strategy's resources share the domain: nvidia.com/mig-1g.10gb.
  std::string mig_prefix = resource_name.substr(0, resource_name.find('/')) + "/mig-";
  for (const v1::PodResources& pod : response.pod_resources()) {
    for (const v1::ContainerResources& container : pod.containers()) {
      for (const v1::ContainerDevices& devices : container.devices()) {
        if (devices.resource_name() != resource_name && devices.resource_name().rfind(mig_prefix, 0) != 0)
          continue;
        for (const std::string& id : devices.device_ids()) {
          out.emplace(id, node::KubernetesNames{pod.name(), pod.namespace_(), container.name()});
        }
      }
    }
  }
  return out;
}

Result<PodAllocations> ListPodResources(const std::string& socket, const std::string& resource_name,
                                        std::chrono::milliseconds timeout) {
  auto channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::PodResourcesLister::Stub> stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(RealWallNow() + timeout);
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  grpc::Status s = stub->List(&context, request, &response);
  if (!s.ok()) {
    return Status::Unavailable(fmt::format("the kubelet's pod resources at {}: {}", socket,
                                           s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                                               ? fmt::format("no answer within {} ms", timeout.count())
                                               : s.error_message()));
  }
  return AllocationsOf(response, resource_name);
}

PodResourcesWatch::PodResourcesWatch(KubeOptions options, std::function<void(const PodAllocations&)> on_list,
                                     Logger* logger)
    : options_(std::move(options)), on_list_(std::move(on_list)), logger_(logger) {}

void PodResourcesWatch::Start() {
  if (options_.pod_resources_socket.empty()) return;
  thread_ = std::jthread([this](std::stop_token stop) {
    while (!stop.stop_requested()) {
      ListNow();
      MutexLock lock(&mu_);
      lock.WaitUntil(wake_, stop, RealSteadyNow() + options_.pod_resources_interval, [] { return false; });
    }
  });
}

void PodResourcesWatch::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake_.notify_all();
    thread_.join();
  }
}

void PodResourcesWatch::ListNow() {
  Result<PodAllocations> listed =
      ListPodResources(options_.pod_resources_socket, options_.resource_name, options_.kubelet_timeout);
  {
    MutexLock lock(&mu_);
    std::string problem = listed.ok() ? std::string() : listed.status().message();
    if (problem != problem_) {
      if (problem.empty()) {
        logger_->Log(LogLevel::kInfo, "kubernetes: reading pod resources from {}",
                     options_.pod_resources_socket);
      } else {
        logger_->Log(LogLevel::kWarning, "kubernetes: {}; pod labels keep the last list", problem);
      }
    }
    problem_ = std::move(problem);
    if (!listed.ok()) return;
    latest_ = std::make_shared<const PodAllocations>(listed.value());
    ++lists_;
  }
  if (on_list_) on_list_(listed.value());
}

std::shared_ptr<const PodAllocations> PodResourcesWatch::Latest() const {
  MutexLock lock(&mu_);
  return latest_;
}

std::string PodResourcesWatch::Problem() const {
  MutexLock lock(&mu_);
  return problem_;
}

int64_t PodResourcesWatch::lists() const {
  MutexLock lock(&mu_);
  return lists_;
}

}  // namespace tarmac::kube
