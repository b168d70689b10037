// SPDX-License-Identifier: Apache-2.0
#include "kube/device_plugin.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "common/clock.h"
#include "deviceplugin.grpc.pb.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::kube {
namespace {

constexpr const char* kApiVersion = "v1beta1";

// A socket file's inode; 0 when there is none.
ino_t InodeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

std::string Joined(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  std::string out = fmt::format("{}", fmt::join(ids, ","));
  return out;
}

}  // namespace

class DevicePlugin::Service final : public v1beta1::DevicePlugin::Service {
 public:
  explicit Service(DevicePlugin* plugin) : plugin_(plugin) {}

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    uint64_t sent = 0;
    for (;;) {
      std::vector<PluginDevice> devices;
      {
        MutexLock lock(&plugin_->mu_);
        lock.WaitFor(plugin_->changed_, std::chrono::milliseconds(100), [&]() REQUIRES(plugin_->mu_) {
          return plugin_->is_stopping_ || plugin_->version_ != sent;
        });
        if (plugin_->is_stopping_ || context->IsCancelled()) return grpc::Status::OK;
        if (plugin_->version_ == sent) continue;
        devices = plugin_->devices_;
        sent = plugin_->version_;
      }
      v1beta1::ListAndWatchResponse response;
      for (const PluginDevice& d : devices) {
        v1beta1::Device* device = response.add_devices();
        device->set_id(d.id);
        device->set_health(d.is_healthy ? "Healthy" : "Unhealthy");
        if (d.numa_node && *d.numa_node >= 0) device->mutable_topology()->add_nodes()->set_id(*d.numa_node);
      }
      if (!writer->Write(response)) return grpc::Status::OK;  // The kubelet went away.
    }
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* out) override {
    std::shared_ptr<const node::Snapshot> snapshot = plugin_->hooks_.latest();
    for (const v1beta1::ContainerPreferredAllocationRequest& r : request->container_requests()) {
      if (r.allocation_size() < 0 || r.must_include_deviceids_size() > r.allocation_size()) {
        return {grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("allocation_size {} with {} devices that must be included", r.allocation_size(),
                            r.must_include_deviceids_size())};
      }
      std::vector<std::string> available(r.available_deviceids().begin(), r.available_deviceids().end());
      std::vector<std::string> must(r.must_include_deviceids().begin(), r.must_include_deviceids().end());
      v1beta1::ContainerPreferredAllocationResponse* answer = out->add_container_responses();
      for (const std::string& id :
           PreferredDevices(snapshot->node_view, available, must, r.allocation_size())) {
        answer->add_deviceids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* out) override {
    std::map<std::string, PluginDevice> known;
    {
      MutexLock lock(&plugin_->mu_);
      for (const PluginDevice& d : plugin_->devices_) known.emplace(d.id, d);
    }
    const KubeOptions& o = plugin_->options_;
    for (const v1beta1::ContainerAllocateRequest& c : request->container_requests()) {
      if (c.devices_ids().empty())
        return {grpc::StatusCode::INVALID_ARGUMENT, "a container request names no device"};
      for (const std::string& id : c.devices_ids()) {
        auto it = known.find(id);
        if (it == known.end()) {
          return {grpc::StatusCode::INVALID_ARGUMENT,
                  fmt::format("tarmac: no {} device {} on this node", o.resource_name, id)};
        }
        if (!it->second.is_healthy) {
          return {grpc::StatusCode::FAILED_PRECONDITION,
                  fmt::format("tarmac: device {} is unhealthy ({})", id, it->second.why_unhealthy)};
        }
      }
    }
    for (const v1beta1::ContainerAllocateRequest& c : request->container_requests()) {
      std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
      Status held = plugin_->hooks_.hold(ids);
      if (!held.ok()) {
        return {held.code() == StatusCode::kUnavailable ? grpc::StatusCode::UNAVAILABLE
                                                        : grpc::StatusCode::FAILED_PRECONDITION,
                "tarmac: " + held.message()};
      }
      v1beta1::ContainerAllocateResponse* answer = out->add_container_responses();
      if (o.is_cdi) {
        for (const std::string& id : ids) answer->add_cdi_devices()->set_name(o.cdi_kind + "=" + id);
      } else {
        (*answer->mutable_envs())[std::string(nvidia::kContainerVisibleDevicesVariable)] =
            Joined(c.devices_ids());
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  DevicePlugin* plugin_;
};

DevicePlugin::DevicePlugin(KubeOptions options, DevicePluginHooks hooks, Logger* logger)
    : options_(std::move(options)),
      hooks_(std::move(hooks)),
      logger_(logger),
      service_(std::make_unique<Service>(this)) {}

DevicePlugin::~DevicePlugin() { Stop(); }

void DevicePlugin::Start() {
  {
    MutexLock lock(&mu_);
    is_stopping_ = false;
  }
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void DevicePlugin::Stop() {
  {
    MutexLock lock(&mu_);
    is_stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void DevicePlugin::SetDevices(std::vector<PluginDevice> devices) {
  {
    MutexLock lock(&mu_);
    if (version_ != 0 && devices == devices_) return;
    for (const PluginDevice& d : devices) {
      auto before =
          std::find_if(devices_.begin(), devices_.end(), [&](const PluginDevice& b) { return b.id == d.id; });
      bool was_healthy = before == devices_.end() || before->is_healthy;
      if (was_healthy != d.is_healthy) {
        logger_->Log(d.is_healthy ? LogLevel::kInfo : LogLevel::kWarning, "kubernetes: device {} is {}{}",
                     d.id, d.is_healthy ? "Healthy again" : "Unhealthy: ", d.why_unhealthy);
      }
    }
    devices_ = std::move(devices);
    ++version_;
  }
  changed_.notify_all();
}

std::string DevicePlugin::Problem() const {
  MutexLock lock(&mu_);
  return problem_;
}

int64_t DevicePlugin::registrations() const {
  MutexLock lock(&mu_);
  return registrations_;
}

uint64_t DevicePlugin::devices_version() const {
  MutexLock lock(&mu_);
  return version_;
}

void DevicePlugin::Loop(std::stop_token stop) {
  std::chrono::milliseconds backoff(500);
  std::string last_said;
  while (!stop.stop_requested()) {
    Status ended = Session(stop);
    if (stop.stop_requested()) break;
    bool is_new = ended.message() != last_said;
    if (!ended.ok() && is_new) {
      logger_->Log(LogLevel::kWarning, "kubernetes: {}; retrying", ended.message());
      if (hooks_.record_event) hooks_.record_event("kube_plugin_problem", ended.message());
    }
    last_said = ended.message();
    {
      MutexLock lock(&mu_);
      problem_ = ended.ok() ? "the kubelet restarted; registering again" : ended.message();
    }
    if (ended.ok()) {
      backoff = std::chrono::milliseconds(500);
      continue;  // The kubelet restarted: register again at once.
    }
    std::condition_variable_any sleep;
    Mutex sleep_mu;
    MutexLock lock(&sleep_mu);
    lock.WaitUntil(sleep, stop, RealSteadyNow() + backoff, [] { return false; });
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
}

Status DevicePlugin::Session(std::stop_token stop) {
  const std::string socket = options_.device_plugin_dir + "/" + options_.endpoint;
  const std::string kubelet = options_.device_plugin_dir + "/kubelet.sock";
  ino_t kubelet_inode = InodeOf(kubelet);
  if (kubelet_inode == 0) return Status::Unavailable(fmt::format("no kubelet at {}", kubelet));
  ::unlink(socket.c_str());  // A stale socket of an earlier run.
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return Status::Unavailable(fmt::format("cannot serve the device plugin on {}", socket));
  auto shut = [&server] {
    server->Shutdown(RealWallNow() + std::chrono::milliseconds(500));
    server->Wait();
  };
  ino_t own_inode = InodeOf(socket);

  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(options_.endpoint);
  request.set_resource_name(options_.resource_name);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  auto channel = grpc::CreateChannel("unix://" + kubelet, grpc::InsecureChannelCredentials());
  std::unique_ptr<v1beta1::Registration::Stub> stub = v1beta1::Registration::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(RealWallNow() + options_.kubelet_timeout);
  v1beta1::Empty empty;
  grpc::Status registered = stub->Register(&context, request, &empty);
  if (!registered.ok()) {
    shut();
    ::unlink(socket.c_str());
    return Status::Unavailable(fmt::format("the kubelet at {} did not register {} ({}): {}", kubelet,
                                           options_.resource_name, static_cast<int>(registered.error_code()),
                                           registered.error_message()));
  }
  {
    MutexLock lock(&mu_);
    problem_.clear();
    ++registrations_;
  }
  logger_->Log(LogLevel::kInfo, "kubernetes: registered {} with the kubelet, serving {}",
               options_.resource_name, socket);
  if (hooks_.record_event) {
    hooks_.record_event("kube_plugin_registered", fmt::format("{} on {}", options_.resource_name, socket));
  }
  // Until the kubelet restarts (its socket is new, or ours was wiped) or a stop.
  std::condition_variable_any tick;
  Mutex tick_mu;
  while (!stop.stop_requested()) {
    {
      MutexLock lock(&tick_mu);
      lock.WaitUntil(tick, stop, RealSteadyNow() + kWatchInterval, [] { return false; });
    }
    if (stop.stop_requested()) break;
    if (InodeOf(socket) != own_inode || InodeOf(kubelet) != kubelet_inode) {
      logger_->Log(LogLevel::kInfo,
                   "kubernetes: the kubelet restarted (its sockets changed); registering again");
      shut();
      return Status::OK();
    }
  }
  shut();
  ::unlink(socket.c_str());
  return Status::OK();
}

}  // namespace tarmac::kube
