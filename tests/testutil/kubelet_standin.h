// SPDX-License-Identifier: Apache-2.0
//
// A kubelet stand-in for tests: it serves the kubelet's side of the device
// plugin API (Registration on <dir>/kubelet.sock) and of the pod-resources
// API (List on its own socket) over the same gRPC services and sockets a
// kubelet uses, and drives a registered plugin as the kubelet does:
// ListAndWatch read on a thread of its own, GetPreferredAllocation and
// Allocate. It can refuse registrations, restart (wiping the socket
// folder, as a kubelet does) and hang its List.
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin.grpc.pb.h"
#include "podresources.grpc.pb.h"

namespace tarmac::testing {

class KubeletStandIn final : public v1beta1::Registration::Service {
 public:
  explicit KubeletStandIn(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
  }
  ~KubeletStandIn() override { Stop(); }

  std::string KubeletSocket() const { return dir_ + "/kubelet.sock"; }

  void Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + KubeletSocket(), grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  void Stop() {
    StopWatching();
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
      server_->Wait();
      server_.reset();
    }
  }
  // As a kubelet restart: down, every socket in the folder removed, up.
  void Restart() {
    Stop();
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) std::filesystem::remove(entry.path());
    Start();
  }

  // Answers Register with this error from now on (nullopt: accepts).
  void Refuse(std::optional<grpc::Status> refusal) {
    std::lock_guard<std::mutex> lock(mu_);
    refusal_ = std::move(refusal);
  }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_++;
    if (refusal_) return *refusal_;
    registrations_.push_back(*request);
    changed_.notify_all();
    return grpc::Status::OK;
  }

  std::vector<v1beta1::RegisterRequest> registrations() {
    std::lock_guard<std::mutex> lock(mu_);
    return registrations_;
  }
  int attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return attempts_;
  }

  // Bounded waits (not timing assertions).
  bool WaitForRegistrations(size_t n, std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, limit, [&] { return registrations_.size() >= n; });
  }
  bool WaitForAttempts(int n, std::chrono::seconds limit = std::chrono::seconds(20)) {
    for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
      if (attempts() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // A client of the plugin that registered last, or of the one that
  // registered `resource`.
  std::unique_ptr<v1beta1::DevicePlugin::Stub> Plugin(const std::string& resource = "") {
    std::string endpoint = registrations().back().endpoint();
    for (const v1beta1::RegisterRequest& r : registrations()) {
      if (r.resource_name() == resource) endpoint = r.endpoint();
    }
    auto channel = grpc::CreateChannel("unix://" + dir_ + "/" + endpoint, grpc::InsecureChannelCredentials());
    return v1beta1::DevicePlugin::NewStub(channel);
  }

  // ListAndWatch, read on a thread; each list is kept with when it came.
  struct Received {
    v1beta1::ListAndWatchResponse list;
    std::chrono::steady_clock::time_point at;
  };
  void Watch() {
    StopWatching();
    auto stub = std::shared_ptr<v1beta1::DevicePlugin::Stub>(Plugin());
    watch_context_ = std::make_unique<grpc::ClientContext>();
    grpc::ClientContext* context = watch_context_.get();
    watcher_ = std::thread([this, stub, context] {
      v1beta1::Empty empty;
      std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
          stub->ListAndWatch(context, empty);
      v1beta1::ListAndWatchResponse response;
      while (reader->Read(&response)) {
        std::lock_guard<std::mutex> lock(mu_);
        lists_.push_back({response, std::chrono::steady_clock::now()});
        changed_.notify_all();
      }
      reader->Finish().ok();
    });
  }
  void StopWatching() {
    if (watch_context_) watch_context_->TryCancel();
    if (watcher_.joinable()) watcher_.join();
    watch_context_.reset();
  }
  std::vector<Received> lists() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_;
  }
  // Waits until a list (the `from`th or later) satisfies `pred`; that
  // list, or nullopt.
  std::optional<Received> WaitForList(const std::function<bool(const v1beta1::ListAndWatchResponse&)>& pred,
                                      size_t from = 0,
                                      std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<Received> found;
    changed_.wait_for(lock, limit, [&] {
      for (size_t i = from; i < lists_.size(); ++i) {
        const Received& r = lists_[i];
        if (pred(r.list)) {
          found = r;
          return true;
        }
      }
      return false;
    });
    return found;
  }

  // The health a list gives device `id`; "" when it is not in the list.
  static std::string HealthOf(const v1beta1::ListAndWatchResponse& list, const std::string& id) {
    for (const v1beta1::Device& d : list.devices()) {
      if (d.id() == id) return d.health();
    }
    return "";
  }

 private:
  std::string dir_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::optional<grpc::Status> refusal_;
  std::vector<v1beta1::RegisterRequest> registrations_;
  int attempts_ = 0;
  std::vector<Received> lists_;
  std::unique_ptr<grpc::ClientContext> watch_context_;
  std::thread watcher_;
};

// The kubelet's pod-resources API: List answers what SetPods last set, or
// hangs (until released or the server stops) after Hang(true).
class PodResourcesStandIn final : public v1::PodResourcesLister::Service {
 public:
  explicit PodResourcesStandIn(std::string socket) : socket_(std::move(socket)) {
    std::filesystem::create_directories(std::filesystem::path(socket_).parent_path());
  }
  ~PodResourcesStandIn() override { Stop(); }
  void Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  void Stop() {
    Hang(false);
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
      server_->Wait();
      server_.reset();
    }
  }
  // One pod with one container holding `device_ids` of `resource`.
  void SetPod(const std::string& ns, const std::string& pod, const std::string& container,
              const std::vector<std::string>& device_ids, const std::string& resource = "nvidia.com/gpu") {
    v1::ListPodResourcesResponse response;
    if (!device_ids.empty()) {
      v1::PodResources* p = response.add_pod_resources();
      p->set_name(pod);
      p->set_namespace_(ns);
      v1::ContainerResources* c = p->add_containers();
      c->set_name(container);
      v1::ContainerDevices* d = c->add_devices();
      d->set_resource_name(resource);
      for (const std::string& id : device_ids) d->add_device_ids(id);
    }
    std::lock_guard<std::mutex> lock(mu_);
    response_ = response;
  }
  void Hang(bool hang) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_hanging_ = hang;
    }
    released_.notify_all();
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  grpc::Status List(grpc::ServerContext* context, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* out) override {
    std::unique_lock<std::mutex> lock(mu_);
    calls_++;
    while (is_hanging_ && !context->IsCancelled()) released_.wait_for(lock, std::chrono::milliseconds(50));
    *out = response_;
    return grpc::Status::OK;
  }

 private:
  std::string socket_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable released_;
  v1::ListPodResourcesResponse response_;
  bool is_hanging_ = false;
  int calls_ = 0;
};

}  // namespace tarmac::testing
