// SPDX-License-Identifier: Apache-2.0
#include "node/node_json.h"

#include <fmt/chrono.h>

#include <cstdlib>

#include "common/json_fields.h"
#include "common/time_spec.h"
#include "node/gpu_marks.h"
#include "node/health_verdict.h"
#include "node/sample_fields.h"
#include "nvidia/clock_event_reasons.h"

namespace tarmac::node {

using nlohmann::json;

namespace {

template <typename T>
void Put(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

// ECC counts, remapped rows, NVLink links and retired pages, where read.
void PutErrorCounters(const GpuSample& s, json& j) {
  json ecc = json::object();
  Put(ecc, "volatile_corrected", s.ecc.volatile_corrected);
  Put(ecc, "volatile_uncorrected", s.ecc.volatile_uncorrected);
  Put(ecc, "aggregate_corrected", s.ecc.aggregate_corrected);
  Put(ecc, "aggregate_uncorrected", s.ecc.aggregate_uncorrected);
  if (!ecc.empty()) j["ecc_errors"] = std::move(ecc);
  if (s.remapped_rows) {
    j["remapped_rows"] = {{"corrected", s.remapped_rows->corrected},
                          {"uncorrected", s.remapped_rows->uncorrected},
                          {"pending", s.remapped_rows->is_pending},
                          {"failure", s.remapped_rows->has_failure}};
  }
  if (!s.nvlink_active.empty()) {
    json links = json::array();
    for (bool active : s.nvlink_active) links.push_back(active);
    j["nvlink_active"] = std::move(links);
  }
  if (s.retired_pages) {
    j["retired_pages"] = {{"single_bit", s.retired_pages->single_bit},
                          {"double_bit", s.retired_pages->double_bit},
                          {"pending", s.retired_pages->is_pending}};
  }
}

// One process on the GPU, with who it is when /proc said.
json ProcessToJson(const ProcessView& p, const GpuView& g) {
  json pj;
  pj["pid"] = p.process.pid;
  pj["type"] = ProcessTypeName(p.process.type);
  Put(pj, "used_memory_bytes", p.process.used_memory_bytes);
  Put(pj, "sm_utilization_ratio", p.process.sm_utilization_ratio);
  Put(pj, "gpu_instance_id", p.process.gpu_instance_id);
  Put(pj, "compute_instance_id", p.process.compute_instance_id);
  if (p.details.exists) {
    pj["uid"] = p.details.uid;
    pj["user"] = p.details.user;
    pj["name"] = p.details.name;
    pj["command"] = p.details.command;
    pj["parent_pid"] = p.details.parent_pid;
    const CgroupIdentity& c = p.details.cgroup;
    if (!c.container_id.empty()) pj["container_id"] = c.container_id;
    if (!c.pod_uid.empty()) pj["pod_uid"] = c.pod_uid;
    if (!c.systemd_unit.empty()) pj["systemd_unit"] = c.systemd_unit;
    if (!c.slurm_job_id.empty()) pj["slurm_job_id"] = c.slurm_job_id;
    const KubernetesNames& k = p.details.kubernetes;
    if (!k.pod.empty()) pj["pod"] = k.pod;
    if (!k.pod_namespace.empty()) pj["namespace"] = k.pod_namespace;
    if (!k.container.empty()) pj["container_name"] = k.container;
  }
  pj["is_idle_holding"] = IsIdleHolding(p, g);
  return pj;
}

}  // namespace

json GpuToJson(const GpuView& g) {
  const GpuInfo& i = g.info;
  const GpuSample& s = g.sample;
  json j;
  j["index"] = i.index;
  j["health"] = GpuHealthName(s.health);
  if (!s.error.empty()) j["error"] = s.error;
  if (!i.uuid.empty()) j["uuid"] = i.uuid;
  if (!i.name.empty()) j["name"] = i.name;
  if (!i.pci_bus_id.empty()) j["pci_bus_id"] = i.pci_bus_id;
  Put(j, "serial", i.serial);
  Put(j, "minor_number", i.minor_number);
  Put(j, "numa_node", i.numa_node);
  Put(j, "cpu_affinity", i.cpu_affinity);
  if (!i.nvlink_peer_bus_ids.empty()) j["nvlink_peers"] = i.nvlink_peer_bus_ids;
  Put(j, "persistence_mode_enabled", i.is_persistence_mode_enabled);
  Put(j, "mig_enabled", i.is_mig_enabled);
  Put(j, "mig_pending", i.is_mig_pending);
  // The readings, from their table (sample_fields.h).
  for (const SampleField& f : SampleFields()) {
    std::visit([&](auto member) { Put(j, f.json_key.data(), s.*member); }, f.member);
  }
  if (!s.memory_total_bytes) Put(j, "memory_total_bytes", i.memory_total_bytes);
  if (s.clock_event_reasons)
    j["clock_event_reasons"] = nvidia::DecodeClockEventReasons(*s.clock_event_reasons);
  Put(j, "utilization_gpu_recent_ratio", g.recent_utilization_ratio);
  Put(j, "power_limit_default_milliwatts", i.power_limit_default_milliwatts);
  Put(j, "temperature_slowdown_celsius", i.temperature_slowdown_celsius);
  Put(j, "sm_clock_max_hertz", i.sm_clock_max_hertz);
  Put(j, "memory_clock_max_hertz", i.memory_clock_max_hertz);
  Put(j, "pcie_generation_max", i.pcie_generation_max);
  Put(j, "pcie_width_max", i.pcie_width_max);
  Put(j, "pcie_tx_bytes_per_second", g.pcie_tx_bytes_per_second);
  Put(j, "pcie_rx_bytes_per_second", g.pcie_rx_bytes_per_second);
  PutErrorCounters(s, j);
  GpuMarks m = MarkGpu(g);
  if (!m.is_unreadable) {
    j["is_idle"] = m.is_idle;
    j["is_throttled"] = m.is_throttled;
    j["throttle_reasons"] = m.throttle_reasons;
    j["is_pcie_degraded"] = m.is_pcie_degraded;
  }
  // The health verdict allocation obeys (node/health_verdict.h).
  HealthVerdict verdict = JudgeGpu(g);
  j["verdict"] = VerdictName(verdict.verdict);
  j["verdict_reasons"] = verdict.reasons;
  json processes = json::array();
  for (const ProcessView& p : g.processes) processes.push_back(ProcessToJson(p, g));
  if (s.health == GpuHealth::kOk) j["processes"] = std::move(processes);
  if (g.xid_count > 0 && g.last_xid) {
    j["xid_errors"] = {{"count", g.xid_count},
                       {"last_xid", g.last_xid->xid},
                       {"last_at", FormatRfc3339(g.last_xid->seen_at)}};
    json by_code = json::object();
    for (const auto& [code, count] : g.xid_count_by_code) by_code[std::to_string(code)] = count;
    j["xid_errors"]["count_by_code"] = std::move(by_code);
  }
  if (!g.earlier_xid_count_by_code.empty()) {
    json by_code = json::object();
    for (const auto& [code, count] : g.earlier_xid_count_by_code) by_code[std::to_string(code)] = count;
    j["xid_errors_before_restart"] = std::move(by_code);
  }
  if (g.lease) j["lease"] = GpuLeaseToJson(*g.lease);
  if (g.drained) j["drained"] = GpuDrainToJson(*g.drained);
  if (g.allocated_to) j["pod"] = PodToJson(*g.allocated_to);
  if (s.has_mig_instances) j["mig_instances"] = MigInstancesToJson(g);
  return j;
}

json PodToJson(const KubernetesNames& pod) {
  return {{"namespace", pod.pod_namespace}, {"name", pod.pod}, {"container", pod.container}};
}

// Each MIG instance with its readings, processes (PIDs), idle holders,
// lease and pod.
json MigInstancesToJson(const GpuView& g) {
  json out = json::array();
  for (const MigInstance& m : g.sample.mig_instances) {
    json mj = {{"uuid", m.uuid},
               {"gpu_instance_id", m.gpu_instance_id},
               {"compute_instance_id", m.compute_instance_id},
               {"profile", m.profile}};
    Put(mj, "memory_total_bytes", m.memory_total_bytes);
    Put(mj, "memory_used_bytes", m.memory_used_bytes);
    Put(mj, "graphics_engine_active_ratio", m.graphics_engine_active_ratio);
    Put(mj, "tensor_active_ratio", m.tensor_active_ratio);
    Put(mj, "dram_active_ratio", m.dram_active_ratio);
    json pids = json::array();
    json idle = json::array();
    for (const ProcessView& p : g.processes) {
      if (p.process.gpu_instance_id != m.gpu_instance_id) continue;
      pids.push_back(p.process.pid);
      if (IsIdleHolding(p, g)) idle.push_back(p.process.pid);
    }
    mj["pids"] = std::move(pids);
    mj["idle_holding_pids"] = std::move(idle);
    if (auto l = g.mig_leases.find(m.uuid); l != g.mig_leases.end()) mj["lease"] = GpuLeaseToJson(l->second);
    if (auto p = g.mig_allocated_to.find(m.uuid); p != g.mig_allocated_to.end())
      mj["pod"] = PodToJson(p->second);
    out.push_back(std::move(mj));
  }
  return out;
}

json GpuLeaseToJson(const GpuLease& lease) {
  json j = {{"id", lease.id},
            {"user", lease.user},
            {"kind", LeaseKindName(lease.kind)},
            {"revoking", lease.is_revoking}};
  if (!lease.slurm_job.empty()) j["slurm_job"] = lease.slurm_job;
  if (lease.lent_to != 0) j["lent_to"] = {{"id", lease.lent_to}, {"user", lease.lent_to_user}};
  return j;
}

json StatusToJson(const NodeView& node_view) {
  json j = StatusHeaderToJson(node_view);
  json gpus = json::array();
  gpus.get_ref<json::array_t&>().reserve(node_view.gpus.size());
  for (const GpuView& g : node_view.gpus) gpus.push_back(GpuToJson(g));
  j["gpus"] = std::move(gpus);
  return j;
}

json StatusHeaderToJson(const NodeView& node_view) {
  json j;
  j["version"] = kStatusJsonVersion;
  j["host"] = node_view.hostname;
  j["backend"] = node_view.backend;
  j["taken_at"] = FormatRfc3339(node_view.taken_at);
  if (!node_view.backend_error.empty()) j["backend_error"] = node_view.backend_error;
  if (!node_view.system.driver_version.empty()) j["driver_version"] = node_view.system.driver_version;
  if (!node_view.system.nvml_version.empty()) j["nvml_version"] = node_view.system.nvml_version;
  Put(j, "cuda_driver_version", node_view.system.cuda_driver_version);
  return j;
}

json GpuDrainToJson(const GpuDrain& drain) {
  return {{"by", drain.by}, {"reason", drain.reason}, {"since_unix", drain.since_unix}};
}

}  // namespace tarmac::node

namespace tarmac::node {
namespace {

using nlohmann::json;

// Status documents are read field by field: one of the wrong type (an
// agent of another version) is left out, the rest still read.
template <typename T>
void Get(const json& j, const char* key, T* out) {
  JsonFields(j, "status", JsonFields::kSkipWrongTypes).Optional(key, out);
}

template <typename T>
T Value(const json& j, const char* key, T fallback) {
  Get(j, key, &fallback);
  return fallback;
}

std::string GetString(const json& j, const char* key) { return Value(j, key, std::string()); }

// {"48": 2, ...} into counts by Xid code; what is not a code and a count is left out.
void CountsByCode(const json& codes, std::map<int64_t, int64_t>* out) {
  if (!codes.is_object()) return;
  for (const auto& [code, count] : codes.items()) {
    char* end = nullptr;
    long long parsed = std::strtoll(code.c_str(), &end, 10);
    if (end != code.c_str() && *end == '\0' && count.is_number_integer())
      (*out)[parsed] = count.get<int64_t>();
  }
}

GpuLease GpuLeaseFromJson(const json& lease) {
  GpuLease l;
  l.id = Value(lease, "id", int64_t{0});
  l.user = GetString(lease, "user");
  // "normal": what agents before the one vocabulary said of run and
  // reservation leases.
  l.kind = ParseLeaseKind(GetString(lease, "kind")).value_or(LeaseKind::kRun);
  l.is_revoking = Value(lease, "revoking", false);
  if (l.kind == LeaseKind::kSlurm) l.slurm_job = GetString(lease, "slurm_job");
  if (auto lent = lease.find("lent_to"); lent != lease.end() && lent->is_object()) {
    l.lent_to = Value(*lent, "id", int64_t{0});
    l.lent_to_user = GetString(*lent, "user");
  }
  return l;
}

KubernetesNames PodFromJson(const json& pod) {
  return KubernetesNames{GetString(pod, "name"), GetString(pod, "namespace"), GetString(pod, "container")};
}

std::chrono::system_clock::time_point ParseRfc3339(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &ms) < 6) {
    return {};
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::chrono::system_clock::from_time_t(timegm(&tm)) + std::chrono::milliseconds(ms);
}

// ECC counts, remapped rows, NVLink links and retired pages, where present.
void GetErrorCounters(const json& j, GpuSample* sample) {
  GpuSample& s = *sample;
  if (auto ecc = j.find("ecc_errors"); ecc != j.end() && ecc->is_object()) {
    Get(*ecc, "volatile_corrected", &s.ecc.volatile_corrected);
    Get(*ecc, "volatile_uncorrected", &s.ecc.volatile_uncorrected);
    Get(*ecc, "aggregate_corrected", &s.ecc.aggregate_corrected);
    Get(*ecc, "aggregate_uncorrected", &s.ecc.aggregate_uncorrected);
  }
  if (auto rows = j.find("remapped_rows"); rows != j.end() && rows->is_object()) {
    RemappedRows r;
    r.corrected = Value(*rows, "corrected", int64_t{0});
    r.uncorrected = Value(*rows, "uncorrected", int64_t{0});
    r.is_pending = Value(*rows, "pending", false);
    r.has_failure = Value(*rows, "failure", false);
    s.remapped_rows = r;
  }
  if (auto links = j.find("nvlink_active"); links != j.end() && links->is_array()) {
    for (const json& l : *links) s.nvlink_active.push_back(l.is_boolean() && l.get<bool>());
  }
  if (auto pages = j.find("retired_pages"); pages != j.end() && pages->is_object()) {
    RetiredPages r;
    r.single_bit = Value(*pages, "single_bit", int64_t{0});
    r.double_bit = Value(*pages, "double_bit", int64_t{0});
    r.is_pending = Value(*pages, "pending", false);
    s.retired_pages = r;
  }
}

ProcessView ProcessFromJson(const json& p) {
  ProcessView v;
  v.process.pid = Value(p, "pid", int64_t{0});
  v.process.type = ProcessTypeNamed(GetString(p, "type"));
  Get(p, "used_memory_bytes", &v.process.used_memory_bytes);
  Get(p, "sm_utilization_ratio", &v.process.sm_utilization_ratio);
  Get(p, "gpu_instance_id", &v.process.gpu_instance_id);
  Get(p, "compute_instance_id", &v.process.compute_instance_id);
  v.details.pid = v.process.pid;
  v.details.exists = p.contains("uid");
  v.details.uid = Value(p, "uid", int64_t{-1});
  v.details.user = p.contains("user") ? GetString(p, "user") : "?";
  v.details.name = GetString(p, "name");
  v.details.command = p.contains("command") ? GetString(p, "command") : "?";
  v.details.parent_pid = Value(p, "parent_pid", int64_t{0});
  v.details.cgroup.container_id = GetString(p, "container_id");
  v.details.cgroup.pod_uid = GetString(p, "pod_uid");
  v.details.cgroup.systemd_unit = GetString(p, "systemd_unit");
  v.details.cgroup.slurm_job_id = GetString(p, "slurm_job_id");
  v.details.kubernetes.pod = GetString(p, "pod");
  v.details.kubernetes.pod_namespace = GetString(p, "namespace");
  v.details.kubernetes.container = GetString(p, "container_name");
  return v;
}

MigInstance MigInstanceFromJson(const json& mj) {
  MigInstance m;
  m.uuid = GetString(mj, "uuid");
  m.gpu_instance_id = Value(mj, "gpu_instance_id", 0);
  m.compute_instance_id = Value(mj, "compute_instance_id", 0);
  m.profile = GetString(mj, "profile");
  Get(mj, "memory_total_bytes", &m.memory_total_bytes);
  Get(mj, "memory_used_bytes", &m.memory_used_bytes);
  Get(mj, "graphics_engine_active_ratio", &m.graphics_engine_active_ratio);
  Get(mj, "tensor_active_ratio", &m.tensor_active_ratio);
  Get(mj, "dram_active_ratio", &m.dram_active_ratio);
  return m;
}

GpuView GpuFromJson(const json& j) {
  GpuView g;
  GpuInfo& i = g.info;
  GpuSample& s = g.sample;
  i.index = Value(j, "index", 0);
  s.index = i.index;
  s.health = GpuHealthNamed(GetString(j, "health"));
  i.health = s.health;
  s.error = GetString(j, "error");
  i.uuid = GetString(j, "uuid");
  i.name = GetString(j, "name");
  i.pci_bus_id = GetString(j, "pci_bus_id");
  Get(j, "serial", &i.serial);
  Get(j, "minor_number", &i.minor_number);
  Get(j, "numa_node", &i.numa_node);
  Get(j, "cpu_affinity", &i.cpu_affinity);
  Get(j, "nvlink_peers", &i.nvlink_peer_bus_ids);
  Get(j, "persistence_mode_enabled", &i.is_persistence_mode_enabled);
  Get(j, "mig_enabled", &i.is_mig_enabled);
  Get(j, "mig_pending", &i.is_mig_pending);
  for (const SampleField& f : SampleFields()) {
    std::visit([&](auto member) { Get(j, f.json_key.data(), &(s.*member)); }, f.member);
  }
  i.memory_total_bytes = s.memory_total_bytes;
  Get(j, "utilization_gpu_recent_ratio", &g.recent_utilization_ratio);
  Get(j, "power_limit_default_milliwatts", &i.power_limit_default_milliwatts);
  Get(j, "temperature_slowdown_celsius", &i.temperature_slowdown_celsius);
  Get(j, "sm_clock_max_hertz", &i.sm_clock_max_hertz);
  Get(j, "memory_clock_max_hertz", &i.memory_clock_max_hertz);
  Get(j, "pcie_generation_max", &i.pcie_generation_max);
  Get(j, "pcie_width_max", &i.pcie_width_max);
  Get(j, "pcie_tx_bytes_per_second", &g.pcie_tx_bytes_per_second);
  Get(j, "pcie_rx_bytes_per_second", &g.pcie_rx_bytes_per_second);
  GetErrorCounters(j, &s);
  if (auto procs = j.find("processes"); procs != j.end() && procs->is_array()) {
    s.has_processes = true;
    for (const json& p : *procs) {
      if (!p.is_object()) continue;
      ProcessView v = ProcessFromJson(p);
      s.processes.push_back(v.process);
      g.processes.push_back(std::move(v));
    }
  }
  if (auto lease = j.find("lease");
      lease != j.end() && lease->is_object() && Value(*lease, "id", int64_t{0}) > 0) {
    g.lease = GpuLeaseFromJson(*lease);
  }
  if (auto drained = j.find("drained"); drained != j.end() && drained->is_object())
    g.drained = GpuDrainFromJson(*drained);
  if (auto pod = j.find("pod"); pod != j.end() && pod->is_object()) g.allocated_to = PodFromJson(*pod);
  if (auto mig = j.find("mig_instances"); mig != j.end() && mig->is_array()) {
    s.has_mig_instances = true;
    for (const json& mj : *mig) {
      if (!mj.is_object()) continue;
      MigInstance m = MigInstanceFromJson(mj);
      if (auto l = mj.find("lease"); l != mj.end() && l->is_object())
        g.mig_leases[m.uuid] = GpuLeaseFromJson(*l);
      if (auto p = mj.find("pod"); p != mj.end() && p->is_object())
        g.mig_allocated_to[m.uuid] = PodFromJson(*p);
      s.mig_instances.push_back(std::move(m));
    }
  }
  if (auto xid = j.find("xid_errors"); xid != j.end() && xid->is_object()) {
    g.xid_count = Value(*xid, "count", int64_t{0});
    GpuEvent last;
    last.gpu_index = i.index;
    last.xid = Value(*xid, "last_xid", int64_t{0});
    last.seen_at = ParseRfc3339(GetString(*xid, "last_at"));
    g.last_xid = last;
    if (auto codes = xid->find("count_by_code"); codes != xid->end())
      CountsByCode(*codes, &g.xid_count_by_code);
  }
  if (auto earlier = j.find("xid_errors_before_restart"); earlier != j.end())
    CountsByCode(*earlier, &g.earlier_xid_count_by_code);
  return g;
}

}  // namespace

Result<NodeView> NodeFromJson(const json& j) {
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array() ||
      Value(j, "version", 0) != kStatusJsonVersion) {
    return Status::Corruption("not a tarmac status document (version 1)");
  }
  NodeView node_view;
  node_view.hostname = GetString(j, "host");
  node_view.backend = GetString(j, "backend");
  node_view.backend_error = GetString(j, "backend_error");
  node_view.system.driver_version = GetString(j, "driver_version");
  node_view.system.nvml_version = GetString(j, "nvml_version");
  Get(j, "cuda_driver_version", &node_view.system.cuda_driver_version);
  node_view.taken_at = ParseRfc3339(GetString(j, "taken_at"));
  for (const json& g : j["gpus"]) {
    if (g.is_object()) node_view.gpus.push_back(GpuFromJson(g));
  }
  for (GpuView& g : node_view.gpus) g.sample.taken_at = node_view.taken_at;
  return node_view;
}

GpuDrain GpuDrainFromJson(const json& drain) {
  return GpuDrain{GetString(drain, "by"), GetString(drain, "reason"), Value(drain, "since_unix", int64_t{0})};
}

std::map<int, UtilizationSeries> UtilizationSeriesFromStatus(const json& status) {
  std::map<int, UtilizationSeries> series;
  if (!status.is_object() || !status.contains("gpus") || !status["gpus"].is_array()) return series;
  for (const json& g : status["gpus"]) {
    JsonFields f(g, "gpu", JsonFields::kSkipWrongTypes);
    int index = -1;
    UtilizationSeries s;
    f.Optional("index", &index);
    f.Optional("utilization_gpu_series", &s.values);
    f.Optional("utilization_gpu_series_seconds", &s.span_seconds);
    if (index >= 0) series[index] = std::move(s);
  }
  return series;
}

}  // namespace tarmac::node
