// SPDX-License-Identifier: Apache-2.0
#include "agent/agent.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "agent/agent_setup.h"
#include "agent/api_methods.h"
#include "agent/backfill_jobs.h"
#include "agent/doctor_watch.h"
#include "agent/free_memory.h"
#include "agent/snapshot_methods.h"
#include "agent/state_lock.h"
#include "agent/systemd_notify.h"
#include "common/fs.h"
#include "common/mutex.h"
#include "common/run_program.h"
#include "config/config_reload.h"
#include "doctor/doctor_render.h"
#include "doctor/host_files.h"
#include "doctor/host_readings.h"
#include "gpu/backend_factory.h"
#include "http/http_config.h"
#include "http/server.h"
#include "ipc/unix_server.h"
#include "kube/device_plugin.h"
#include "kube/pod_resources.h"
#include "leases/lease_service.h"
#include "leases/lease_ticker.h"
#include "leases/process_control.h"
#include "metrics/counters.h"
#include "sampler/sampler.h"
#include "store/event_query.h"
#include "store/last_use.h"
#include "store/schema.h"
#include "store/writer.h"
#include "web/fleet_routes.h"
#include "web/http_routes.h"
#include "web/web_redaction.h"
#include "web/web_routes.h"

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

namespace tarmac::agent {
namespace {

// `snapshot` with the agent's leases and backfill preemptions marked on its
// GPUs (the history keeps which GPU-time was backfill, and counts the
// preemptions); `snapshot` itself when there is nothing to mark.
std::shared_ptr<const node::Snapshot> WithLeases(const std::shared_ptr<const node::Snapshot>& snapshot,
                                                 const node::LeaseMarks& marks) {
  if (marks.empty()) return snapshot;
  auto marked = std::make_shared<node::Snapshot>(*snapshot);
  node::ApplyLeaseMarks(marks, &marked->node_view);
  return marked;
}

// What /health reports besides the GPUs: state that cannot be saved.
std::string Problems(const leases::LeaseService& leases, store::StoreWriter* history) {
  std::string problems = leases.Problem();
  if (history != nullptr) {
    std::string h = history->Problem();
    if (!h.empty()) problems += (problems.empty() ? "" : "; ") + h;
  }
  return problems;
}

}  // namespace

namespace {

// The running agent, built in named steps. Members are declared in the
// order they are made, so that they are destroyed in reverse: the servers
// before the sampler, the sampler before the lease thread, the lease thread
// before the lease service, everything before the state lock is let go.
class Agent {
 public:
  Agent(const AgentFlags& flags, config::Config config, Clock* clock, Logger* logger)
      : flags_(flags), config_(std::move(config)), reloaded_(config_), clock_(clock), logger_(logger) {}
  ~Agent() { Stop(); }

  // Nothing is opened or written before these checks: another agent on the
  // socket, the HTTP address (bound now, served later), and another agent
  // on the state directory (an exclusive lock, held until exit).
  Status Claim();
  // The history database and the saved leases (restored); the lease thread.
  Status OpenState();
  // The first sample, then the sampler thread.
  Status StartSampling();
  // The API's method table, HTTP, then the Unix socket: once the socket
  // answers, every front door is open.
  Status Serve();
  // Until SIGTERM or SIGINT; SIGHUP reloads the config.
  void WaitForSignals(const sigset_t& signals);
  void Stop();

 private:
  void OnTick(const std::shared_ptr<const node::Snapshot>& s);
  // Serve's steps: what the agent says of itself (info_); the API's method
  // table and the Unix socket's server; the doctor's watch; the HTTP routes
  // (web_ given them); and, once the socket answers, the workers.
  void Describe(const std::string& backend_name);
  Status MakeApi();
  void MakeDoctorWatch();
  Status StartWeb();
  void StartWorkers(const node::NodeView& first);
  void Reload();
  // Backfill's idle_for counts on from each GPU's last use in the history
  // (an agent restarted a minute ago does not make idle GPUs wait again).
  // Before the first tick, what the agent carries on from before it
  // started: each GPU's last use (backfill's idle time) from the history,
  // and the Xids of this boot from the kernel log and the history (the
  // GPUs' health verdicts go on counting them: docs/health.md). The
  // history is opened once for both.
  void SeedFromHistory();
  void OpenKubernetes();
  // Tells the kubelet (through the device plugin) what the GPUs are now.
  void UpdateDevices(const node::NodeView& node_view);

  const AgentFlags& flags_;
  config::Config config_;
  // The config as reloads have changed it (the live sections); only the
  // signal thread (Reload) reads or writes it.
  config::Config reloaded_;
  Clock* clock_;
  Logger* logger_;
  std::string signal_name_;
  std::unique_ptr<http::HttpServer> web_;
  std::optional<StateLock> state_lock_;
  std::unique_ptr<store::StoreWriter> history_;
  std::unique_ptr<metrics::NodeCounters> counters_;
  std::unique_ptr<leases::ProcessControl> process_control_;
  std::unique_ptr<leases::LeaseService> leases_;
  std::unique_ptr<leases::LeaseTicker> lease_ticker_;
  std::unique_ptr<BackfillJobs> backfill_;
  std::unique_ptr<DoctorWatch> doctor_;
  std::atomic<DoctorWatch*> doctor_for_ticks_{nullptr};  // doctor_ once made (read by the sampler thread).
  // The /metrics page cache (with [http]), prerendered after each sample
  // while someone scrapes; published to the sampler thread once made.
  std::shared_ptr<metrics::PageCache> metrics_pages_;
  std::atomic<metrics::PageCache*> pages_for_ticks_{nullptr};
  // The web console's stream feed, given each sample's batch (built here,
  // while a stream is open) and woken after each sample.
  std::shared_ptr<web::StreamFeed> stream_feed_;
  std::atomic<web::StreamFeed*> feed_for_ticks_{nullptr};
  // What the threads freed goes back to the system every ten seconds, so
  // the agent's RSS stays where its live memory is (agent/free_memory.h).
  // The sampling thread's alone.
  FreeMemoryReleaser free_memory_{std::chrono::seconds(10)};
  // With [kubernetes]: the device plugin and the pod-resources reader.
  std::unique_ptr<kube::PodResourcesWatch> pods_;
  std::unique_ptr<kube::DevicePlugin> plugin_;
  kube::DevicePluginHooks kube_hooks_;
  // The mixed MIG strategy's plugins, one per profile's resource, made when
  // the profile first shows (from the sampler's thread).
  Mutex mig_plugins_mu_;
  std::map<std::string, std::unique_ptr<kube::DevicePlugin>> mig_plugins_ GUARDED_BY(mig_plugins_mu_);
  bool are_plugins_started_ GUARDED_BY(mig_plugins_mu_) = false;
  std::unique_ptr<SystemdNotifier> systemd_;
  std::string lock_problem_;  // Sampler thread: the last state lock problem said.
  std::unique_ptr<sampler::Sampler> sampler_;
  AgentInfo info_;
  ipc::MethodTable methods_;
  std::unique_ptr<ipc::UnixServer> server_;
  bool is_stopped_ = false;
};

Status Agent::Claim() {
  if (ipc::IsServing(config_.agent.socket_path)) {
    return Status::FailedPrecondition(
        fmt::format("agent: another agent is serving {}", config_.agent.socket_path),
        "stop it first, or give this one its own --socket and --state-dir");
  }
  if (config_.http.listen != http::kListenOff) {
    web_ = std::make_unique<http::HttpServer>(config_.http, logger_);
    Status s = web_->Bind();
    if (!s.ok()) return s;
  }
  Status s = MakeDirs(config_.agent.state_dir);
  if (!s.ok()) return s.WithContext("agent: state directory");
  Result<StateLock> lock = StateLock::Acquire(config_.agent.state_dir);
  if (!lock.ok()) return lock.status().WithContext("agent");
  state_lock_.emplace(std::move(lock).value());
  s = MakeDirs(Dirname(config_.agent.socket_path));
  if (!s.ok()) return s.WithContext("agent: socket directory");
  logger_->Log(LogLevel::kInfo, "agent: state in {}", config_.agent.state_dir);
  return Status::OK();
}

Status Agent::OpenState() {
  history_ = OpenHistory(config_, clock_, logger_);
  if (history_)
    history_->RecordEvent("agent_start", fmt::format("tarmac {} (pid {})", TARMAC_VERSION, getpid()));
  counters_ = std::make_unique<metrics::NodeCounters>(
      [pricing = config_.report](const std::string& model) { return pricing.GpuHourCost(model); });
  // Leases, the queue, idle leases, zombies and foreign processes: judged
  // on the lease thread each tick, asked about by the API.
  Result<std::unique_ptr<store::LeaseState>> state =
      store::LeaseState::Open(config_.agent.state_dir + "/leases.db");
  if (!state.ok()) return StateError(state.status(), "open the lease state", "the saved leases");
  process_control_ = leases::MakeProcessControl();
  leases_ = std::make_unique<leases::LeaseService>(config_.leases, std::move(state).value(),
                                                   process_control_.get(), clock_, logger_);
  Status s = leases_->Restore();
  if (!s.ok()) return StateError(s, "restore the saved leases", "them");
  // The [slurm] idle policy asks Slurm itself (scontrol, scancel).
  leases_->SetSlurmCommand([](const std::vector<std::string>& argv) -> Status {
    Result<std::pair<std::string, int>> ran = RunProgram(argv, std::chrono::seconds(10));
    if (!ran.ok()) return ran.status();
    if (ran.value().second != 0)
      return Status::Internal(fmt::format("{} exited with {}", argv[0], ran.value().second));
    return Status::OK();
  });
  // The lease service ticks on its own thread: no sampler tick waits for
  // its commits, /proc scans or signals.
  lease_ticker_ = std::make_unique<leases::LeaseTicker>(leases_.get());
  lease_ticker_->Start();
  // Backfill batches, each run by a runner process of its own.
  char self[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  backfill_ = std::make_unique<BackfillJobs>(
      BackfillJobsOptions{
          config_.agent.state_dir + "/backfill",
          BackfillJobs::FindRunner(n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string()),
          config_.agent.socket_path, config_.leases.admin_group,
          [leases = leases_.get()](const std::string& kind, int64_t uid, const std::string& user,
                                   int64_t actor_uid, const std::string& detail) {
            leases->RecordEvent(kind, uid, user, actor_uid, detail);
          },
          gpu::WorldEnvironment(config_.gpu), config_.leases.backfill.nice},
      process_control_.get(), clock_, logger_);
  leases_->SetBatchRunners(
      [jobs = backfill_.get()](const sched::ProcessRef& p) { return jobs->IsRunner(p.pid, p.start_ticks); });
  s = backfill_->Open();
  if (!s.ok()) return StateError(s, "read the backfill batches", "them");
  if (config_.kubernetes.is_enabled) OpenKubernetes();
  return Status::OK();
}

void Agent::OpenKubernetes() {
  leases::LeaseService* leases = leases_.get();
  pods_ = std::make_unique<kube::PodResourcesWatch>(
      config_.kubernetes, [leases](const kube::PodAllocations& pods) { leases->SyncPods(pods); }, logger_);
  kube::DevicePluginHooks hooks;
  hooks.hold = [leases](const std::vector<std::string>& uuids) { return leases->HoldForPod(uuids); };
  hooks.latest = [this] { return sampler_->Latest(); };
  hooks.record_event = [leases](const std::string& kind, const std::string& detail) {
    leases->RecordEvent(kind, -1, "", -1, detail);
  };
  kube_hooks_ = hooks;
  plugin_ = std::make_unique<kube::DevicePlugin>(config_.kubernetes, std::move(hooks), logger_);
}

void Agent::UpdateDevices(const node::NodeView& node_view) {
  DoctorWatch* doctor = doctor_for_ticks_.load();
  std::shared_ptr<const leases::LeaseService::Publication> marks = leases_->Marks();
  const kube::KubeOptions& k = config_.kubernetes;
  std::map<std::string, std::vector<kube::PluginDevice>> by_resource = kube::DevicesByResource(
      node_view, marks->leases, marks->mig_leases,
      doctor != nullptr ? doctor->CriticalGpus() : std::set<int>(), k.resource_name, k.mig_strategy);
  MutexLock lock(&mig_plugins_mu_);
  for (auto& [resource, devices] : by_resource) {
    if (resource == k.resource_name) {
      plugin_->SetDevices(std::move(devices));
      continue;
    }
    std::unique_ptr<kube::DevicePlugin>& plugin = mig_plugins_[resource];
    if (plugin == nullptr) {  // A profile's resource (mixed): its own plugin and socket.
      kube::KubeOptions options = k;
      options.resource_name = resource;
      options.endpoint = "tarmac-" + resource.substr(resource.find('/') + 1) + ".sock";
      plugin = std::make_unique<kube::DevicePlugin>(options, kube_hooks_, logger_);
      if (are_plugins_started_) plugin->Start();
    }
    plugin->SetDevices(std::move(devices));
  }
  for (auto& [resource, plugin] : mig_plugins_) {
    if (by_resource.count(resource) == 0) plugin->SetDevices({});  // No instance of the profile now.
  }
}

void Agent::OnTick(const std::shared_ptr<const node::Snapshot>& s) {
  if (systemd_->has_watchdog()) systemd_->Notify("WATCHDOG=1");
  Status held = state_lock_->Reassert();
  if (!held.ok() && held.message() != lock_problem_) {
    logger_->Log(LogLevel::kError, "agent: the state lock: {}", held.message());
  }
  lock_problem_ = held.ok() ? std::string() : held.message();
  // The marks the lease thread published: this tick never waits for its lock.
  std::shared_ptr<const node::LeaseMarks> marks = leases_->Marks();
  counters_->Update(s->node_view, *marks, s->taken_at_steady);
  lease_ticker_->Submit(s);
  if (plugin_) UpdateDevices(s->node_view);
  if (history_) history_->Submit(WithLeases(s, *marks));
  // Last: the page for scrapers and the streams' batch, so none of them
  // pays the render.
  if (metrics::PageCache* pages = pages_for_ticks_.load()) pages->Prerender(s);
  if (web::StreamFeed* feed = feed_for_ticks_.load()) feed->Publish();
  free_memory_.MaybeRelease(s->taken_at_steady);
}

Status Agent::StartSampling() {
  systemd_ = std::make_unique<SystemdNotifier>(logger_);
  gpu::BackendOptions backend_options = config_.gpu;
  Clock* clock = clock_;
  Logger* logger = logger_;
  // One name for the node everywhere: the one its metrics carry.
  sampler::SamplerOptions sampler_options = config_.sampler;
  sampler_options.hostname = config_.metrics.hostname;
  sampler_ = std::make_unique<sampler::Sampler>(
      [backend_options, clock, logger] { return gpu::OpenBackend(backend_options, clock, logger); },
      sampler_options, clock_, logger_,
      [this](const std::shared_ptr<const node::Snapshot>& s) { OnTick(s); });
  if (kube::PodResourcesWatch* pods = pods_.get()) {
    // Each GPU carries the pod the kubelet last said it is allocated to:
    // read from the cache, never from the kubelet, on the sampler's thread.
    sampler_->SetAnnotator([pods](node::NodeView* node_view) {
      std::shared_ptr<const kube::PodAllocations> allocations = pods->Latest();
      if (allocations->empty()) return;
      for (node::GpuView& g : node_view->gpus) {
        if (auto it = allocations->find(g.info.uuid); it != allocations->end()) g.allocated_to = it->second;
        for (const node::MigInstance& m : g.sample.mig_instances) {
          if (auto it = allocations->find(m.uuid); it != allocations->end())
            g.mig_allocated_to[m.uuid] = it->second;
        }
      }
    });
  }
  // A GPU being handed over is read again as soon as it should be empty.
  sampler::Sampler* sampler = sampler_.get();
  leases_->OnWantsReading([sampler] { sampler->RequestReading(); });
  // A GPU an admin undrains has its Xids forgotten: they vouched for it.
  leases_->OnUndrain([sampler](const std::string& uuid) { sampler->ForgetXids(uuid); });
  SeedFromHistory();
  return sampler_->Start();
}

Status Agent::Serve() {
  std::shared_ptr<const node::Snapshot> first = sampler_->Latest();
  std::string backend_name =
      first->node_view.backend.empty() ? gpu::BackendKindName(config_.gpu.kind) : first->node_view.backend;
  Describe(backend_name);
  RaiseOpenFileLimit(config_.api.max_connections, logger_);
  if (Status s = MakeApi(); !s.ok()) return s;
  MakeDoctorWatch();
  if (web_) {
    if (Status s = StartWeb(); !s.ok()) return s;
  }
  if (Status s = server_->Start(); !s.ok()) return s;
  StartWorkers(first->node_view);
  systemd_->Notify("READY=1");
  size_t gpu_count = first->node_view.gpus.size();
  if (first->node_view.backend_error.empty()) {
    logger_->Log(LogLevel::kInfo, "agent: ready: {} GPU{} via {}, sampling every {} ms, serving {}",
                 gpu_count, gpu_count == 1 ? "" : "s", backend_name, config_.sampler.fast_interval.count(),
                 config_.agent.socket_path);
  } else {
    logger_->Log(LogLevel::kWarning, "agent: ready without GPUs (waiting for the driver), serving {}",
                 config_.agent.socket_path);
  }
  return Status::OK();
}

void Agent::Describe(const std::string& backend_name) {
  info_.version = TARMAC_VERSION;
  info_.pid = getpid();
  info_.backend = backend_name;
  info_.started_at_unix = UnixSeconds(clock_->WallNow());
  if (store::StoreWriter* history = history_.get()) {
    // Absolute: the history commands open it from their own folder.
    std::error_code ec;
    std::string path = std::filesystem::absolute(config::StorePath(config_), ec).lexically_normal().string();
    info_.store_status = [history, path] {
      store::StoreStats st = history->stats();
      nlohmann::json j = {{"path", path},
                          {"ticks_written", st.ticks_written},
                          {"ticks_skipped", st.ticks_skipped},
                          {"ticks_dropped", st.ticks_dropped},
                          {"paused", st.is_paused}};
      if (!st.last_error.empty()) j["last_error"] = st.last_error;
      return j;
    };
  }
  leases::LeaseService* leases = leases_.get();
  info_.lease_marks = [leases]() -> std::shared_ptr<const node::LeaseMarks> { return leases->Marks(); };
  info_.lease_state = [leases] { return leases->StateJson(); };
}

Status Agent::MakeApi() {
  // Every API method, from one table.
  sampler::Sampler* sampler = sampler_.get();
  const AgentInfo* info = &info_;
  Status s = AddApiMethods(
      &methods_,
      [sampler, info](const ipc::Request& request, const ipc::PeerCredentials& peer) {
        std::shared_ptr<const node::Snapshot> snapshot = sampler->Latest();
        node::SamplerStats stats = sampler->stats();
        return AnswerSnapshotMethod(request, peer, *info, snapshot.get(), &stats, &sampler->history());
      },
      leases_.get(), backfill_.get());
  if (!s.ok()) return s;
  ipc::ServerOptions server_options = config_.api;
  server_options.socket_path = config_.agent.socket_path;
  ipc::MethodTable* methods = &methods_;
  server_ = std::make_unique<ipc::UnixServer>(
      server_options,
      [methods](const std::string& line, const ipc::PeerCredentials& peer,
                const ipc::Reply& reply) -> std::optional<std::string> {
        ipc::Decoded decoded = ipc::DecodeRequest(line);
        if (!decoded.ok) return decoded.error_response;
        return methods->Dispatch(decoded.request, peer, reply);
      },
      clock_, logger_);
  return Status::OK();
}

void Agent::MakeDoctorWatch() {
  // The doctor's cheap checks on a schedule ([doctor]).
  sampler::Sampler* sampler = sampler_.get();
  leases::LeaseService* leases = leases_.get();
  store::StoreWriter* history = history_.get();
  DoctorWatchOptions doctor;
  doctor.watch = config_.doctor;
  doctor.store_path = history != nullptr ? config::StorePath(config_) : std::string();
  doctor.latest = [sampler] { return sampler->Latest(); };
  doctor.lease_marks = [leases]() -> std::shared_ptr<const node::LeaseMarks> { return leases->Marks(); };
  doctor.record_events = [leases,
                          history](const std::vector<std::pair<std::string, std::string>>& kind_detail) {
    leases->RecordAgentEvents(kind_detail);
    if (history != nullptr) {
      for (const auto& [kind, detail] : kind_detail) history->RecordEvent(kind, detail);
    }
  };
  doctor_ = std::make_unique<DoctorWatch>(std::move(doctor), clock_, logger_);
  doctor_for_ticks_.store(doctor_.get());
}

Status Agent::StartWeb() {
  sampler::Sampler* sampler = sampler_.get();
  leases::LeaseService* leases = leases_.get();
  store::StoreWriter* history = history_.get();
  http::RouteTable routes;
  DoctorWatch* watch = doctor_.get();
  web::HttpRouteHooks hooks;
  hooks.problems = [leases, history] { return Problems(*leases, history); };
  hooks.lease_marks = [leases]() -> std::shared_ptr<const node::LeaseMarks> { return leases->Marks(); };
  hooks.agent_figures = [leases, backfill = backfill_.get(), watch, plugin = plugin_.get(),
                         pods = pods_.get()] {
    node::AgentFigures f = leases->figures();
    backfill->AddFigures(&f);
    f.doctor_findings = watch->Counts();
    if (plugin != nullptr) f.kube_plugin_registered = plugin->Problem().empty();
    if (pods != nullptr && pods->is_listing()) {
      f.kube_pod_resources_up = pods->lists() > 0 && pods->Problem().empty();
    }
    return f;
  };
  hooks.findings = [watch, plugin = plugin_.get(), pods = pods_.get()] {
    std::string found = watch->Problem();
    // Named, without failing /health: the agent serves on.
    for (std::string more : {plugin != nullptr ? plugin->Problem() : std::string(),
                             pods != nullptr ? pods->Problem() : std::string()}) {
      if (!more.empty()) found += (found.empty() ? "kubernetes: " : "; kubernetes: ") + more;
    }
    return found;
  };
  Status s = web::AddHttpRoutes(&routes, config_, TARMAC_VERSION, sampler, counters_.get(), clock_,
                                std::move(hooks), &metrics_pages_);
  if (s.ok()) {
    web::WebRouteHooks web;
    web.methods = &methods_;
    web.sampler = sampler;
    web.status = [sampler, info = &info_] { return SnapshotStatus(*info, *sampler->Latest()); };
    web.status_text = [sampler, info = &info_](std::string* out,
                                               const std::function<void(nlohmann::json*)>& edit) {
      AppendSnapshotStatus(out, *info, *sampler->Latest(), edit);
    };
    // The lease reads, typed: as a caller without privileges (no tokens).
    web.lease_listing = [leases = leases_.get()] {
      return leases->Listing(sched::Caller{static_cast<int64_t>(web::kWebUid), "", false});
    };
    web.lease_events = [leases = leases_.get()](int64_t after, int64_t limit, bool newest) {
      return leases->Events(after, limit, newest);
    };
    web.doctor = [watch] {
      nlohmann::json findings = nlohmann::json::array();
      for (const doctor::Finding& f : watch->Findings()) findings.push_back(doctor::FindingToJson(f));
      return nlohmann::json{{"runs", watch->runs()}, {"findings", std::move(findings)}};
    };
    web.store_path = history != nullptr ? config::StorePath(config_) : std::string();
    web.pricing = config_.report;
    web.web = config_.web;
    s = web::AddWebRoutes(&routes, std::move(web), clock_, &stream_feed_);
    if (s.ok()) feed_for_ticks_.store(stream_feed_.get());
    if (s.ok()) s = web::AddFleetRoutes(&routes, config_.fleet, clock_);
  }
  if (s.ok()) pages_for_ticks_.store(metrics_pages_.get());
  // Last, so that it covers every route under /api/.
  web::RedactApiRoutes(&routes, config_.web.show_command_lines);
  if (s.ok()) s = web_->Start(std::move(routes));
  if (!s.ok()) return s;
  info_.http = {{"url", web_->url()}, {"token_required", web_->is_token_required()}};
  return Status::OK();
}

void Agent::StartWorkers(const node::NodeView& first) {
  backfill_->Start();
  doctor_->Start();
  if (plugin_) {
    UpdateDevices(first);
    plugin_->Start();
    {
      MutexLock lock(&mig_plugins_mu_);
      are_plugins_started_ = true;
      for (auto& [resource, plugin] : mig_plugins_) plugin->Start();
    }
    pods_->Start();
  }
}

void Agent::SeedFromHistory() {
  int64_t now = UnixSeconds(clock_->WallNow());
  struct sysinfo si {};
  std::optional<int64_t> booted_unix;
  if (::sysinfo(&si) == 0) booted_unix = now - static_cast<int64_t>(si.uptime);
  // The kernel's own log of this boot (as the doctor reads it; best effort:
  // a hardened unit may not read it), resolved to GPUs by PCI address.
  doctor::HostFiles host("/");
  host.SetDeadline(clock_->SteadyNow() + std::chrono::seconds(2), clock_);
  if (Result<std::string> log = host.KernelLog(); booted_unix && log.ok()) {
    std::vector<sampler::Sampler::LoggedXid> logged;
    for (const doctor::KernelXid& x : doctor::ParseKernelXids(log.value())) {
      if (x.seconds_since_boot)
        logged.push_back({x.pci, x.xid, *booted_unix + static_cast<int64_t>(*x.seconds_since_boot)});
    }
    if (!logged.empty()) {
      logger_->Log(LogLevel::kInfo, "health: {} Xid(s) in the kernel log since the host booted",
                   logged.size());
      sampler_->SeedLoggedXids(std::move(logged), leases_->XidsClearedAt());
    }
  }
  if (!history_) return;
  Result<std::unique_ptr<store::Db>> db = store::OpenForReading(config::StorePath(config_));
  if (!db.ok()) return;
  if (booted_unix) {
    Result<std::map<std::string, std::map<int64_t, int64_t>>> xids =
        store::QueryXidsSince(db.value().get(), *booted_unix, leases_->XidsClearedAt());
    if (xids.ok() && !xids.value().empty()) {
      logger_->Log(LogLevel::kInfo, "health: Xids of {} GPU(s) since the host booted read from the history",
                   xids.value().size());
      sampler_->SeedEarlierXids(std::move(xids).value());
    }
  }
  // Seen within the last two minutes: the history was being written until
  // about when the agent stopped, so no unseen work ran in between.
  Result<std::map<std::string, int64_t>> last = store::LastUseByGpu(db.value().get(), now - 120);
  if (!last.ok() || last.value().empty()) return;
  leases_->SeedBackfillLastUse(last.value());
  logger_->Log(LogLevel::kInfo, "backfill: idle time of {} GPU(s) counted from the history",
               last.value().size());
}

void Agent::Reload() {
  systemd_->Notify("RELOADING=1");
  Result<config::Config> reloaded = LoadAgentConfig(flags_);
  if (!reloaded.ok()) {
    logger_->Log(LogLevel::kError, "agent: config reload refused; keeping the running config:\n{}",
                 reloaded.status().message());
  } else {
    config::ReloadPlan plan = config::PlanReload(reloaded_, reloaded.value());
    reloaded_ = plan.result;
    sampler_->SetIntervals(reloaded_.sampler);
    LogLevel level = LogLevel::kInfo;
    if (ParseLogLevel(reloaded_.agent.log_level, &level)) logger_->set_level(level);
    if (leases_) leases_->SetPolicy(reloaded_.leases);
    if (backfill_) backfill_->SetNice(reloaded_.leases.backfill.nice);
    std::string what = config::DescribeReload(plan);
    logger_->Log(plan.restart.empty() ? LogLevel::kInfo : LogLevel::kWarning, "agent: config reloaded: {}",
                 what);
    if (history_) history_->RecordEvent("config_reload", what);
    // And in the event log `tarmac events` and the console show.
    if (leases_) leases_->RecordAgentEvents({{"config_reload", what}});
  }
  systemd_->Notify("READY=1");
}

void Agent::WaitForSignals(const sigset_t& signals) {
  for (;;) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal == SIGHUP) {
      Reload();
      continue;
    }
    signal_name_ = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    logger_->Log(LogLevel::kInfo, "agent: {} received; stopping", signal_name_);
    systemd_->Notify("STOPPING=1");
    return;
  }
}

void Agent::Stop() {
  if (is_stopped_) return;
  is_stopped_ = true;
  if (web_) web_->Stop();
  if (server_) server_->Stop();
  if (plugin_) plugin_->Stop();
  {
    MutexLock lock(&mig_plugins_mu_);
    for (auto& [resource, plugin] : mig_plugins_) plugin->Stop();
  }
  if (pods_) pods_->Stop();
  if (backfill_) backfill_->Stop();  // Runners go on; the next agent adopts them.
  if (doctor_) doctor_->Stop();
  if (sampler_) sampler_->Stop();
  if (lease_ticker_) lease_ticker_->Stop();
  if (history_) {
    if (!signal_name_.empty()) history_->RecordEvent("agent_stop", signal_name_);
    history_->Stop();
  }
}

}  // namespace

Status RunAgent(const AgentFlags& flags, Clock* clock, Logger* logger) {
  Result<config::Config> loaded = LoadAgentConfig(flags);
  if (!loaded.ok()) return loaded.status();
  // A simulated world without a scenario never comes up (a driver may):
  // refused before anything is claimed or written, not waited for.
  if (Status usable = gpu::CheckBackendOptions(loaded.value().gpu); !usable.ok()) return usable;
  LogLevel level = LogLevel::kInfo;
  if (ParseLogLevel(loaded.value().agent.log_level, &level)) logger->set_level(level);

  // Signals are taken synchronously by this thread (sigwait); block them
  // before any thread starts so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Past a file-size limit, a write should fail (and pause history) rather
  // than kill the agent.
  signal(SIGXFSZ, SIG_IGN);

  Agent agent(flags, std::move(loaded).value(), clock, logger);
  for (Status (Agent::*step)() : {&Agent::Claim, &Agent::OpenState, &Agent::StartSampling, &Agent::Serve}) {
    Status s = (agent.*step)();
    if (!s.ok()) return s;
  }
  agent.WaitForSignals(signals);
  agent.Stop();
  return Status::OK();
}

}  // namespace tarmac::agent
