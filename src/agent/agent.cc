// SPDX-License-Identifier: Apache-2.0
#include "agent/agent.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "agent/api_methods.h"
#include "agent/http_routes.h"
#include "leases/lease_service.h"
#include "leases/lease_ticker.h"
#include "leases/process_control.h"
#include "agent/state_lock.h"
#include "agent/systemd_notify.h"
#include "common/fs.h"
#include "gpu/backend_factory.h"
#include "ipc/unix_server.h"
#include "sampler/sampler.h"
#include "http/server.h"
#include "metrics/counters.h"
#include "store/writer.h"

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

namespace tarmac::agent {
namespace {

sampler::SamplerOptions SamplerOptionsOf(const config::Config& c) {
  return sampler::SamplerOptions{c.fast_interval, c.slow_interval, c.call_timeout, c.reattach_interval};
}

store::StoreOptions StoreOptionsOf(const config::Config& c) {
  store::StoreOptions o;
  o.path = config::StorePath(c);
  o.retention.raw = std::chrono::duration_cast<std::chrono::seconds>(c.raw_retention);
  o.retention.minute = std::chrono::duration_cast<std::chrono::seconds>(c.minute_retention);
  o.retention.hour = std::chrono::duration_cast<std::chrono::seconds>(c.hour_retention);
  o.fast_interval = c.fast_interval;
  o.integrity_check_interval = std::chrono::duration_cast<std::chrono::seconds>(c.integrity_check_interval);
  return o;
}

// Opens the history store; on failure logs why and runs without history.
std::unique_ptr<store::StoreWriter> OpenHistory(const config::Config& c, Clock* clock, Logger* logger) {
  if (!c.is_store_enabled) return nullptr;
  Result<std::unique_ptr<store::StoreWriter>> writer = store::StoreWriter::Open(StoreOptionsOf(c), clock, logger);
  if (!writer.ok()) {
    logger->Log(LogLevel::kError, "{}; history is off (live data is still served)", writer.status().message());
    return nullptr;
  }
  logger->Log(LogLevel::kInfo, "store: writing history to {}", config::StorePath(c));
  writer.value()->Start();
  return std::move(writer).value();
}

// Why a state file cannot be used, and what to do: a permission problem is
// one (run as a user who may, or another --state-dir); anything else can be
// moved aside to start without what it held.
Status StateError(const Status& s, const char* doing, const char* what) {
  if (s.code() == StatusCode::kPermissionDenied || s.message().find("ermission denied") != std::string::npos ||
      s.message().find("readonly") != std::string::npos || s.message().find("read-only") != std::string::npos) {
    return s.WithContext(fmt::format("agent: cannot {} (a permission problem: run the agent as a user who may "
                                     "write its state directory, or give it --state-dir)",
                                     doing));
  }
  return s.WithContext(fmt::format("agent: cannot {} (move the file aside to start without {})", doing, what));
}

// What /health reports besides the GPUs: state that cannot be saved.
// Each API client holds a descriptor while it waits (lease.wait): raise the
// soft open-file limit to fit max_connections, as far as the hard limit
// allows, and say so when it cannot.
void RaiseOpenFileLimit(int max_connections, Logger* logger) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t wanted = static_cast<rlim_t>(max_connections) + 256;  // Databases, HTTP, the NVML library.
  if (limit.rlim_cur >= wanted) return;
  rlim_t raised = std::min(wanted, limit.rlim_max);
  if (raised > limit.rlim_cur) {
    limit.rlim_cur = raised;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (raised < wanted) {
    logger->Log(LogLevel::kWarning, "agent: open files limited to {} (hard limit); [api] max_connections {} needs {}",
                static_cast<long long>(raised), max_connections, static_cast<long long>(wanted));
  }
}

std::string Problems(const leases::LeaseService& leases, store::StoreWriter* history) {
  std::string problems = leases.Problem();
  if (history != nullptr) {
    std::string h = history->Problem();
    if (!h.empty()) problems += (problems.empty() ? "" : "; ") + h;
  }
  return problems;
}

}  // namespace

Result<config::Config> LoadAgentConfig(const AgentFlags& flags) {
  std::string path = flags.config_path.empty() ? config::kDefaultConfigPath : flags.config_path;
  Result<config::Config> loaded = config::LoadConfig(path, !flags.config_path.empty());
  if (!loaded.ok()) return loaded.status();
  config::Config c = loaded.value();
  config::ApplyAgentFlags(flags, &c);
  // A private agent of a normal user keeps its state in the user's state
  // home, not in the system's (which it may not write).
  if (flags.state_dir.empty() && c.state_dir == config::Config().state_dir && ::geteuid() != 0) {
    const char* xdg = std::getenv("XDG_STATE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg != nullptr && *xdg == '/') {
      c.state_dir = std::string(xdg) + "/tarmac";
    } else if (home != nullptr && *home == '/') {
      c.state_dir = std::string(home) + "/.local/state/tarmac";
    }
  }
  gpu::BackendKind kind;
  if (!gpu::ParseBackendKind(c.backend, &kind)) {
    return Status::InvalidArgument("--backend: expected auto, nvml or sim", c.backend);
  }
  return c;
}

Status RunAgent(const AgentFlags& flags, Clock* clock, Logger* logger) {
  Result<config::Config> loaded = LoadAgentConfig(flags);
  if (!loaded.ok()) return loaded.status();
  config::Config config = loaded.value();
  LogLevel level = LogLevel::kInfo;
  if (ParseLogLevel(config.log_level, &level)) logger->set_level(level);

  // Signals are taken synchronously by this thread (sigwait); block them
  // before any thread starts so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Past a file-size limit, a write should fail (and pause history) rather
  // than kill the agent.
  signal(SIGXFSZ, SIG_IGN);

  // Nothing is opened or written before these checks: another agent on
  // the socket, the HTTP address (bound now, served later), and another
  // agent on the state directory (an exclusive lock, held until exit).
  if (ipc::IsServing(config.socket_path)) {
    return Status::FailedPrecondition(fmt::format("agent: another agent is serving {}", config.socket_path),
                                      "stop it first, or give this one its own --socket and --state-dir");
  }
  Status s;
  std::unique_ptr<http::HttpServer> web;
  if (config.http_listen != "off") {
    http::HttpOptions http_options;
    http_options.listen = config.http_listen;
    web = std::make_unique<http::HttpServer>(http_options, logger);
    s = web->Bind();
    if (!s.ok()) return s;
  }
  s = MakeDirs(config.state_dir);
  if (!s.ok()) return s.WithContext("agent: state directory");
  Result<StateLock> state_lock = StateLock::Acquire(config.state_dir);
  if (!state_lock.ok()) return state_lock.status().WithContext("agent");
  s = MakeDirs(Dirname(config.socket_path));
  if (!s.ok()) return s.WithContext("agent: socket directory");
  logger->Log(LogLevel::kInfo, "agent: state in {}", config.state_dir);

  gpu::BackendOptions backend_options;
  gpu::ParseBackendKind(config.backend, &backend_options.kind);
  backend_options.nvml_library = config.nvml_library;
  backend_options.sim.scenario_path = config.scenario;
  backend_options.sim.dir = config.sim_dir;
  std::unique_ptr<store::StoreWriter> history = OpenHistory(config, clock, logger);
  if (history) history->RecordEvent("agent_start", fmt::format("tarmac {} (pid {})", TARMAC_VERSION, getpid()));
  store::StoreWriter* history_writer = history.get();

  metrics::FleetCounters counters([config](const std::string& model) { return config::GpuHourCost(config, model); });
  // Leases, the queue, idle leases, zombies and foreign processes: judged
  // on the lease thread each tick, asked about by the API.
  std::unique_ptr<store::LeaseState> lease_state;
  {
    std::string path = config.state_dir + "/leases.db";
    Result<std::unique_ptr<store::LeaseState>> opened = store::LeaseState::Open(path);
    if (!opened.ok()) return StateError(opened.status(), "open the lease state", "the saved leases");
    lease_state = std::move(opened).value();
  }
  std::unique_ptr<leases::ProcessControl> process_control = leases::MakeProcessControl();
  leases::LeaseService leases(leases::LeasePolicyOf(config), std::move(lease_state), process_control.get(), clock, logger);
  s = leases.Restore();
  if (!s.ok()) return StateError(s, "restore the saved leases", "them");
  // The lease service ticks on its own thread: no sampler tick waits for
  // its commits, /proc scans or signals.
  leases::LeaseTicker lease_ticker(&leases);
  lease_ticker.Start();

  SystemdNotifier systemd(logger);
  std::string lock_problem;  // Sampler thread: the last state lock problem said.
  bool has_watchdog = systemd.has_watchdog();
  sampler::Sampler sampler([backend_options, clock, logger] { return gpu::OpenBackend(backend_options, clock, logger); },
                           SamplerOptionsOf(config), clock, logger,
                           [has_watchdog, &systemd, history_writer, &counters, &lease_ticker, &state_lock,
                            &lock_problem, logger](const std::shared_ptr<const fleet::Snapshot>& s) {
                             if (has_watchdog) systemd.Notify("WATCHDOG=1");
                             Status held = state_lock.value().Reassert();
                             if (!held.ok() && held.message() != lock_problem) {
                               logger->Log(LogLevel::kError, "agent: the state lock: {}", held.message());
                             }
                             lock_problem = held.ok() ? std::string() : held.message();
                             counters.Update(s->fleet, s->taken_at_steady);
                             lease_ticker.Submit(s);
                             if (history_writer != nullptr) history_writer->Submit(s);
                           });
  s = sampler.Start();
  if (!s.ok()) return s;
  std::shared_ptr<const fleet::Snapshot> first = sampler.Latest();
  std::string backend_name = first->fleet.backend.empty() ? config.backend : first->fleet.backend;
  size_t gpu_count = first->fleet.gpus.size();

  ipc::AgentInfo info;
  info.version = TARMAC_VERSION;
  info.pid = getpid();
  info.backend = backend_name;
  info.started_at_unix = std::chrono::duration_cast<std::chrono::seconds>(clock->WallNow().time_since_epoch()).count();
  if (history_writer != nullptr) {
    std::string path = config::StorePath(config);
    info.store_status = [history_writer, path] {
      store::StoreStats st = history_writer->stats();
      nlohmann::json j = {{"path", path},
                          {"ticks_written", st.ticks_written},
                          {"ticks_skipped", st.ticks_skipped},
                          {"ticks_dropped", st.ticks_dropped},
                          {"paused", st.is_paused}};
      if (!st.last_error.empty()) j["last_error"] = st.last_error;
      return j;
    };
  }
  info.gpu_leases = [&leases] { return leases.LeaseByGpu(); };
  info.lease_state = [&leases] { return leases.StateJson(); };
  RaiseOpenFileLimit(config.max_connections, logger);
  ipc::ServerOptions server_options;
  server_options.socket_path = config.socket_path;
  server_options.max_connections = config.max_connections;
  server_options.max_request_bytes = config.max_request_bytes;
  server_options.request_timeout = config.request_timeout;
  // Every API method, from one table.
  ipc::MethodTable methods;
  s = AddApiMethods(
      &methods,
      [&sampler, &info](const ipc::Request& request, const ipc::PeerCredentials& peer) {
        std::shared_ptr<const fleet::Snapshot> snapshot = sampler.Latest();
        fleet::SamplerStats stats = sampler.stats();
        return ipc::Handle(request, peer, info, snapshot.get(), &stats, &sampler.history());
      },
      &leases);
  if (!s.ok()) {
    sampler.Stop();
    return s;
  }
  ipc::UnixServer server(
      server_options,
      [&methods](const std::string& line, const ipc::PeerCredentials& peer,
                 const ipc::Reply& reply) -> std::optional<std::string> {
        ipc::Decoded decoded = ipc::DecodeRequest(line);
        if (!decoded.ok) return decoded.error_response;
        return methods.Dispatch(decoded.request, peer, reply);
      },
      clock, logger);
  // HTTP first: once the socket answers, every front door is open.
  if (web) {
    http::RouteTable routes;
    s = AddHttpRoutes(&routes, config, TARMAC_VERSION, &sampler, &counters, clock,
                      [&leases, history_writer] { return Problems(leases, history_writer); });
    if (s.ok()) s = web->Start(std::move(routes));
    if (!s.ok()) {
      sampler.Stop();
      return s;
    }
  }
  s = server.Start();
  if (!s.ok()) {
    if (web) web->Stop();
    sampler.Stop();
    return s;
  }
  systemd.Notify("READY=1");
  if (first->fleet.backend_error.empty()) {
    logger->Log(LogLevel::kInfo, "agent: ready: {} GPU{} via {}, sampling every {} ms, serving {}", gpu_count,
                gpu_count == 1 ? "" : "s", backend_name, config.fast_interval.count(), config.socket_path);
  } else {
    logger->Log(LogLevel::kWarning, "agent: ready without GPUs (waiting for the driver), serving {}",
                config.socket_path);
  }

  std::string signal_name;
  for (;;) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal == SIGHUP) {
      systemd.Notify("RELOADING=1");
      Result<config::Config> reloaded = LoadAgentConfig(flags);
      if (!reloaded.ok()) {
        logger->Log(LogLevel::kError, "agent: config reload refused; keeping the running config:\n{}",
                    reloaded.status().message());
      } else {
        config::Config next = reloaded.value();
        sampler.SetIntervals(SamplerOptionsOf(next));
        if (ParseLogLevel(next.log_level, &level)) logger->set_level(level);
        if (next.socket_path != config.socket_path || next.backend != config.backend) {
          logger->Log(LogLevel::kWarning, "agent: socket and backend changes take effect on restart");
        }
        logger->Log(LogLevel::kInfo, "agent: config reloaded: sampling every {} ms", next.fast_interval.count());
        if (history) history->RecordEvent("config_reload", fmt::format("sampling every {} ms", next.fast_interval.count()));
      }
      systemd.Notify("READY=1");
      continue;
    }
    signal_name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    logger->Log(LogLevel::kInfo, "agent: {} received; stopping", signal_name);
    systemd.Notify("STOPPING=1");
    break;
  }
  if (web) web->Stop();
  server.Stop();
  sampler.Stop();
  lease_ticker.Stop();
  if (history) {
    history->RecordEvent("agent_stop", signal_name);
    history->Stop();
  }
  return Status::OK();
}

}  // namespace tarmac::agent
