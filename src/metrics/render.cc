// SPDX-License-Identifier: Apache-2.0
#include "metrics/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <span>
#include <tuple>

#include "metrics/accounting_render.h"
#include "metrics/exposition.h"
#include "metrics/family.h"
#include "metrics/mig_render.h"
#include "metrics/node_render.h"
#include "metrics/pod_labels.h"
#include "node/health_verdict.h"
#include "node/metric_families.h"
#include "node/sample_fields.h"
#include "nvidia/clock_event_reasons.h"
#include "nvidia/xid_catalog.h"

namespace tarmac::metrics {
namespace {

using node::GpuView;
using Value = std::function<std::optional<double>(const node::GpuView&)>;

template <typename T>
std::optional<double> Scaled(const std::optional<T>& v, double scale) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * scale;
}

struct GpuFamily {
  FamilyDoc doc;
  Value value;
};

// The families of the readings table (node/sample_fields.h) that have a
// `column`, in table order, then `more`.
std::vector<GpuFamily> WithTableFamilies(node::MetricFamilyOf node::SampleField::*column,
                                         std::vector<GpuFamily> more) {
  std::vector<GpuFamily> all;
  for (const node::SampleField& reading : node::SampleFields()) {
    const node::MetricFamilyOf& family = reading.*column;
    if (family.name.empty()) continue;
    all.push_back({{std::string(family.name), std::string(family.type), std::string(family.help)},
                   [&reading, scale = family.scale](const node::GpuView& g) {
                     return std::visit([&](auto member) { return Scaled(g.sample.*member, scale); },
                                       reading.member);
                   }});
  }
  all.insert(all.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  return all;
}

const std::vector<GpuFamily>& DcgmGpuFamilies() {
  static const std::vector<GpuFamily> kFamilies = WithTableFamilies(
      &node::SampleField::dcgm,
      {
          {{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
            "Number of remapped rows for uncorrectable errors"},
           [](const node::GpuView& g) -> std::optional<double> {
             if (!g.sample.remapped_rows) return std::nullopt;
             return static_cast<double>(g.sample.remapped_rows->uncorrected);
           }},
          {{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
            "Number of remapped rows for correctable errors"},
           [](const node::GpuView& g) -> std::optional<double> {
             if (!g.sample.remapped_rows) return std::nullopt;
             return static_cast<double>(g.sample.remapped_rows->corrected);
           }},
          {{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"},
           [](const node::GpuView& g) -> std::optional<double> {
             if (!g.sample.remapped_rows) return std::nullopt;
             return g.sample.remapped_rows->has_failure ? 1.0 : 0.0;
           }},
          {{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."},
           [](const node::GpuView& g) { return Scaled(g.sample.ecc.volatile_corrected, 1.0); }},
          {{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."},
           [](const node::GpuView& g) { return Scaled(g.sample.ecc.volatile_uncorrected, 1.0); }},
          {{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors."},
           [](const node::GpuView& g) { return Scaled(g.sample.ecc.aggregate_corrected, 1.0); }},
          {{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors."},
           [](const node::GpuView& g) { return Scaled(g.sample.ecc.aggregate_uncorrected, 1.0); }},
      });
  return kFamilies;
}

// dcgm-exporter families rendered with more than one value per GPU: the
// last Xid (with its labels), PCIe TX and RX rates (from the counters), in
// this order.
const std::vector<FamilyDoc>& DcgmComputedFamilies() {
  static const std::vector<FamilyDoc> kFamilies = {
      {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
       "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - "
       "in "
       "bytes per second."},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
       "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in "
       "bytes "
       "per second."},
  };
  return kFamilies;
}

const std::vector<GpuFamily>& NativeGpuFamilies() {
  static const std::vector<GpuFamily> kFamilies = WithTableFamilies(
      &node::SampleField::native,
      {
          {{node::family::kGpuMemoryTotalBytes, "gauge", "GPU memory in total."},
           [](const node::GpuView& g) {
             return Scaled(
                 g.sample.memory_total_bytes ? g.sample.memory_total_bytes : g.info.memory_total_bytes, 1.0);
           }},
          {{node::family::kGpuPcieLinkWidthMax, "gauge", "PCIe link width the GPU and slot support."},
           [](const node::GpuView& g) { return Scaled(g.info.pcie_width_max, 1.0); }},
          {{node::family::kGpuPcieLinkGenerationMax, "gauge", "PCIe generation the GPU and slot support."},
           [](const node::GpuView& g) { return Scaled(g.info.pcie_generation_max, 1.0); }},
          {{node::family::kGpuRemappedRowsPending, "gauge", "1 when a row remapping waits for a GPU reset."},
           [](const node::GpuView& g) -> std::optional<double> {
             if (!g.sample.remapped_rows) return std::nullopt;
             return g.sample.remapped_rows->is_pending ? 1.0 : 0.0;
           }},
          {{node::family::kGpuRemappedRowsFailed, "gauge", "1 when row remapping has failed."},
           [](const node::GpuView& g) -> std::optional<double> {
             if (!g.sample.remapped_rows) return std::nullopt;
             return g.sample.remapped_rows->has_failure ? 1.0 : 0.0;
           }},
          {{node::family::kGpuIdle, "gauge",
            "1 when the GPU is under 5 % utilization now (in MIG mode: its engine activity, GPM)."},
           IdleMarkValue},
          {{node::family::kGpuHeldIdle, "gauge", "1 when a process holds memory on the GPU at 0 % SM now."},
           HeldIdleMarkValue},
      });
  return kFamilies;
}

// With `with_pod`, the GPU's pod labels (GpuPod) when it has a pod.
Labels DcgmLabels(const node::GpuView& g, const std::string& host, const std::string& driver,
                  const RenderOptions& options, bool with_pod = true) {
  int device = g.info.minor_number.value_or(g.info.index);
  Labels l = {{"gpu", std::to_string(g.info.index)},
              {"UUID", g.info.uuid},
              {"pci_bus_id", g.info.pci_bus_id},
              {"device", fmt::format("nvidia{}", device)},
              {"modelName", g.info.name},
              {options.dcgm_hostname_label, host},
              {"DCGM_FI_DRIVER_VERSION", driver}};
  if (const node::KubernetesNames* pod = with_pod ? GpuPod(g) : nullptr)
    AddPodLabels(*pod, g, std::nullopt, options.has_device_pod_uid, &l);
  return l;
}

// What one scrape renders from, shared by the collectors below.
struct Scrape {
  const node::Snapshot& snapshot;
  const node::NodeView& node_view;
  const node::SamplerStats& stats;
  const std::map<std::string, GpuCounters>& counters;
  const RenderOptions& options;
  std::string host;
};

// dcgm-exporter's families, under its names and labels.
void CollectDcgm(const Scrape& s, Exposition* out) {
  const node::NodeView& node_view = s.node_view;
  const std::string& host = s.host;
  const RenderOptions& options = s.options;
  // Each GPU's labels once (finding its pod walks its processes), not once
  // per family.
  std::vector<Labels> dcgm_labels;
  dcgm_labels.reserve(node_view.gpus.size());
  for (const node::GpuView& g : node_view.gpus) {
    dcgm_labels.push_back(DcgmLabels(g, host, node_view.system.driver_version, options));
  }
  // MIG instances: their labels once too (mig_render.h).
  std::vector<std::pair<const node::MigInstance*, Labels>> mig_labels;
  for (const node::GpuView& g : node_view.gpus) {
    if (!Readable(g) || g.sample.mig_instances.empty()) continue;
    Labels base = DcgmLabels(g, host, node_view.system.driver_version, options, false);
    for (const node::MigInstance& m : g.sample.mig_instances)
      mig_labels.emplace_back(&m, DcgmMigLabels(base, g, m, options.has_device_pod_uid));
  }
  for (const GpuFamily& f : DcgmGpuFamilies()) {
    out->Family(f.doc.name, f.doc.type, f.doc.help);
    for (size_t i = 0; i < node_view.gpus.size(); ++i) {
      const node::GpuView& g = node_view.gpus[i];
      if (!Readable(g)) continue;  // A lost GPU's series go stale (absent).
      if (std::optional<double> v = f.value(g)) out->Sample(f.doc.name, dcgm_labels[i], *v);
    }
    for (const auto& [m, labels] : mig_labels) {
      if (std::optional<double> v = DcgmMigValue(f.doc.name, *m)) out->Sample(f.doc.name, labels, *v);
    }
  }
  const std::vector<FamilyDoc>& more = DcgmComputedFamilies();
  // The last Xid, with dcgm-exporter 4.x's err_code and err_msg labels.
  out->Family(more[0].name, more[0].type, more[0].help);
  for (size_t i = 0; i < node_view.gpus.size(); ++i) {
    const node::GpuView& g = node_view.gpus[i];
    if (!Readable(g)) continue;
    int64_t xid = g.last_xid ? g.last_xid->xid : 0;
    Labels l = dcgm_labels[i];
    l.emplace_back("err_code", std::to_string(xid));
    l.emplace_back("err_msg", xid == 0 ? "" : nvidia::LookUpXid(xid).name);
    out->Sample("DCGM_FI_DEV_XID_ERRORS", l, static_cast<double>(xid));
  }
  // PCIe bytes per second: the view's rate (node/counter_rate.h), as
  // status shows it.
  for (const auto& [doc, tx] : {std::pair{&more[1], true}, std::pair{&more[2], false}}) {
    const std::string& name = doc->name;
    out->Family(name, doc->type, doc->help);
    for (size_t i = 0; i < node_view.gpus.size(); ++i) {
      const node::GpuView& g = node_view.gpus[i];
      const std::optional<double>& rate = tx ? g.pcie_tx_bytes_per_second : g.pcie_rx_bytes_per_second;
      if (Readable(g) && rate) out->Sample(name, dcgm_labels[i], *rate);
    }
  }
}

// The families CollectGpuState renders.
constexpr Family kGpuInfo{node::family::kGpuInfo, "gauge", "GPU identity; always 1."};
constexpr Family kGpuUp{node::family::kGpuUp, "gauge", "1 when the GPU could be read at the last sample."};
constexpr Family kGpuLost{node::family::kGpuLost, "gauge",
                          "1 when the GPU has fallen off the bus or is lost."};
constexpr Family kGpuPodAllocated{
    node::family::kGpuPodAllocated, "gauge",
    "1 for the pod and container the kubelet allocated the GPU to (pod resources), whether or "
    "not it runs."};
constexpr Family kGpuUnresponsive{node::family::kGpuUnresponsive, "gauge",
                                  "1 when a driver call on the GPU has not returned in time."};
constexpr Family kGpuHealth{node::family::kGpuHealth, "gauge",
                            "1 for the GPU's health verdict (ok, degraded, drain; docs/health.md), 0 for the "
                            "others. Allocation never hands out a GPU to drain."};
constexpr std::array kGpuStateFamilies = {&kGpuInfo,         &kGpuUp,           &kGpuLost,
                                          &kGpuPodAllocated, &kGpuUnresponsive, &kGpuHealth};

// Whether each GPU is there and readable.
void CollectGpuState(const Scrape& s, Exposition* out) {
  const node::NodeView& node_view = s.node_view;
  const std::string& host = s.host;
  Head(out, kGpuInfo);
  for (const node::GpuView& g : node_view.gpus) {
    Labels l = NativeLabels(g, host);
    l.emplace_back("pci_bus_id", g.info.pci_bus_id);
    l.emplace_back("driver_version", node_view.system.driver_version);
    out->Sample(node::family::kGpuInfo, l, 1);
  }
  Head(out, kGpuUp);
  for (const node::GpuView& g : node_view.gpus)
    out->Sample(node::family::kGpuUp, NativeLabels(g, host), Readable(g) ? 1 : 0);
  Head(out, kGpuLost);
  for (const node::GpuView& g : node_view.gpus) {
    out->Sample(node::family::kGpuLost, NativeLabels(g, host),
                g.sample.health == node::GpuHealth::kLost ? 1 : 0);
  }
  bool has_allocations = std::any_of(node_view.gpus.begin(), node_view.gpus.end(),
                                     [](const node::GpuView& g) { return g.allocated_to.has_value(); });
  if (has_allocations) {
    Head(out, kGpuPodAllocated);
    for (const node::GpuView& g : node_view.gpus) {
      if (!g.allocated_to) continue;
      Labels l = NativeLabels(g, host);
      AddPodLabels(*g.allocated_to, g, std::nullopt, s.options.has_device_pod_uid, &l);
      out->Sample(node::family::kGpuPodAllocated, l, 1);
    }
  }
  Head(out, kGpuUnresponsive);
  for (const node::GpuView& g : node_view.gpus) {
    out->Sample(node::family::kGpuUnresponsive, NativeLabels(g, host),
                g.sample.health == node::GpuHealth::kUnresponsive ? 1 : 0);
  }
  Head(out, kGpuHealth);
  for (const node::GpuView& g : node_view.gpus) {
    node::Verdict verdict = node::JudgeGpu(g).verdict;
    for (node::Verdict v : {node::Verdict::kOk, node::Verdict::kDegraded, node::Verdict::kDrain}) {
      Labels l = NativeLabels(g, host);
      l.emplace_back("verdict", node::VerdictName(v));
      out->Sample(node::family::kGpuHealth, l, v == verdict ? 1 : 0);
    }
  }
}

// The families CollectGpuReadings renders.
constexpr Family kGpuThrottled{node::family::kGpuThrottled, "gauge",
                               "1 when the GPU's clocks are lowered for this reason now."};
constexpr Family kGpuThrottleSecondsTotal{node::family::kGpuThrottleSecondsTotal, "counter",
                                          "Time the GPU's clocks were lowered, by reason."};
constexpr std::array kGpuReadingsFamilies = {&kGpuThrottled, &kGpuThrottleSecondsTotal};

// Each GPU's readings, and why it throttles (now and in total).
void CollectGpuReadings(const Scrape& s, Exposition* out) {
  const node::NodeView& node_view = s.node_view;
  const std::string& host = s.host;
  const std::map<std::string, GpuCounters>& counters = s.counters;
  for (const GpuFamily& f : NativeGpuFamilies()) {
    out->Family(f.doc.name, f.doc.type, f.doc.help);
    for (const node::GpuView& g : node_view.gpus) {
      if (!Readable(g)) continue;
      if (std::optional<double> v = f.value(g)) out->Sample(f.doc.name, NativeLabels(g, host), *v);
    }
  }
  Head(out, kGpuThrottled);
  for (const node::GpuView& g : node_view.gpus) {
    if (!Readable(g) || !g.sample.clock_event_reasons) continue;
    for (const nvidia::ClockEventReason& r : nvidia::ClockEventReasons()) {
      if (!r.is_throttle) continue;
      out->Sample(node::family::kGpuThrottled, With(NativeLabels(g, host), "reason", std::string(r.name)),
                  (*g.sample.clock_event_reasons & r.bit) ? 1 : 0);
    }
  }
  Head(out, kGpuThrottleSecondsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    auto c = counters.find(g.info.uuid);
    if (c == counters.end()) continue;
    for (const auto& [reason, seconds] : c->second.throttle_seconds) {
      out->Sample(node::family::kGpuThrottleSecondsTotal, With(NativeLabels(g, host), "reason", reason),
                  seconds);
    }
  }
}

// The families CollectGpuErrors renders.
constexpr Family kGpuEccErrorsTotal{node::family::kGpuEccErrorsTotal, "counter",
                                    "ECC errors, by kind (corrected, uncorrected) and scope."};
constexpr Family kGpuRemappedRowsTotal{node::family::kGpuRemappedRowsTotal, "counter",
                                       "Rows remapped, by kind (corrected, uncorrected)."};
constexpr Family kGpuXidErrorsTotal{node::family::kGpuXidErrorsTotal, "counter",
                                    "Xid errors seen by the agent since it started, by code."};
constexpr std::array kGpuErrorsFamilies = {&kGpuEccErrorsTotal, &kGpuRemappedRowsTotal, &kGpuXidErrorsTotal};

// ECC, remapped rows and Xid errors.
void CollectGpuErrors(const Scrape& s, Exposition* out) {
  const node::NodeView& node_view = s.node_view;
  const std::string& host = s.host;
  Head(out, kGpuEccErrorsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    if (!Readable(g)) continue;
    const node::EccCounts& e = g.sample.ecc;
    auto put = [&](const std::optional<int64_t>& v, const char* kind, const char* scope) {
      if (v)
        out->Sample(node::family::kGpuEccErrorsTotal,
                    With(With(NativeLabels(g, host), "kind", kind), "scope", scope), static_cast<double>(*v));
    };
    put(e.volatile_corrected, "corrected", "volatile");
    put(e.volatile_uncorrected, "uncorrected", "volatile");
    put(e.aggregate_corrected, "corrected", "aggregate");
    put(e.aggregate_uncorrected, "uncorrected", "aggregate");
  }
  Head(out, kGpuRemappedRowsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    if (!Readable(g) || !g.sample.remapped_rows) continue;
    out->Sample(node::family::kGpuRemappedRowsTotal, With(NativeLabels(g, host), "kind", "corrected"),
                static_cast<double>(g.sample.remapped_rows->corrected));
    out->Sample(node::family::kGpuRemappedRowsTotal, With(NativeLabels(g, host), "kind", "uncorrected"),
                static_cast<double>(g.sample.remapped_rows->uncorrected));
  }
  Head(out, kGpuXidErrorsTotal);
  for (const node::GpuView& g : node_view.gpus) {
    for (const auto& [code, n] : g.xid_count_by_code) {
      out->Sample(node::family::kGpuXidErrorsTotal, With(NativeLabels(g, host), "xid", std::to_string(code)),
                  static_cast<double>(n));
    }
  }
}

// The families CollectProcesses renders.
constexpr Family kProcessGpuMemoryBytes{node::family::kProcessGpuMemoryBytes, "gauge",
                                        "GPU memory a process holds."};
constexpr Family kProcessSmUtilizationRatio{node::family::kProcessSmUtilizationRatio, "gauge",
                                            "A process's share of the GPU's SMs (0-1)."};
constexpr Family kProcessSeriesDropped{node::family::kProcessSeriesDropped, "gauge",
                                       "Processes left out of the per-process series by the cap."};
constexpr std::array kProcessesFamilies = {&kProcessGpuMemoryBytes, &kProcessSmUtilizationRatio,
                                           &kProcessSeriesDropped};

// Per process, under a cap: the biggest memory holders first.
void CollectProcesses(const Scrape& s, Exposition* out) {
  const node::NodeView& node_view = s.node_view;
  const std::string& host = s.host;
  const RenderOptions& options = s.options;
  std::vector<std::pair<const node::GpuView*, const node::ProcessView*>> processes;
  for (const node::GpuView& g : node_view.gpus) {
    for (const node::ProcessView& p : g.processes) processes.emplace_back(&g, &p);
  }
  std::stable_sort(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
    return a.second->process.used_memory_bytes.value_or(0) > b.second->process.used_memory_bytes.value_or(0);
  });
  size_t dropped =
      processes.size() > options.max_process_series ? processes.size() - options.max_process_series : 0;
  processes.resize(processes.size() - dropped);
  auto process_labels = [&](const node::GpuView& g, const node::ProcessView& p) {
    Labels l = NativeLabels(g, host);
    l.emplace_back("pid", std::to_string(p.process.pid));
    l.emplace_back("user", p.details.user);
    l.emplace_back("command", p.details.name.empty() ? p.details.command.substr(0, 64) : p.details.name);
    if (!p.details.cgroup.container_id.empty()) {
      l.emplace_back("container_id", p.details.cgroup.container_id.substr(0, 12));
    }
    if (!p.details.cgroup.pod_uid.empty()) l.emplace_back("pod_uid", p.details.cgroup.pod_uid);
    if (!p.details.cgroup.slurm_job_id.empty()) l.emplace_back("slurm_job", p.details.cgroup.slurm_job_id);
    // `container` is the container's name, as kube-state-metrics and
    // cAdvisor use it.
    const node::KubernetesNames& k = p.details.kubernetes;
    if (!k.pod.empty()) l.emplace_back("pod", k.pod);
    if (!k.pod_namespace.empty()) l.emplace_back("namespace", k.pod_namespace);
    if (!k.container.empty()) l.emplace_back("container", k.container);
    return l;
  };
  Head(out, kProcessGpuMemoryBytes);
  for (const auto& [g, p] : processes) {
    if (p->process.used_memory_bytes) {
      out->Sample(node::family::kProcessGpuMemoryBytes, process_labels(*g, *p),
                  static_cast<double>(*p->process.used_memory_bytes));
    }
  }
  Head(out, kProcessSmUtilizationRatio);
  for (const auto& [g, p] : processes) {
    if (p->process.sm_utilization_ratio) {
      out->Sample(node::family::kProcessSmUtilizationRatio, process_labels(*g, *p),
                  *p->process.sm_utilization_ratio);
    }
  }
  Head(out, kProcessSeriesDropped);
  out->Sample(node::family::kProcessSeriesDropped, {{"hostname", host}}, static_cast<double>(dropped));
}

// The families CollectAgent renders.
constexpr Family kBuildInfo{node::family::kBuildInfo, "gauge", "The agent's version; always 1."};
constexpr Family kDriverUp{node::family::kDriverUp, "gauge", "1 when the GPU driver can be read at all."};
constexpr Family kNvmlErrorsTotal{node::family::kNvmlErrorsTotal, "counter",
                                  "Failed NVML calls since the agent started, by function and error."};
constexpr Family kSampleDurationSeconds{node::family::kSampleDurationSeconds, "gauge",
                                        "How long the last sample took."};
constexpr Family kLastSampleTimestampSeconds{node::family::kLastSampleTimestampSeconds, "gauge",
                                             "When the last sample was taken (Unix time)."};
constexpr Family kSamplerTicksTotal{node::family::kSamplerTicksTotal, "counter",
                                    "Samples taken since the agent started."};
constexpr std::array kAgentFamilies = {
    &kBuildInfo,        &kDriverUp, &kNvmlErrorsTotal, &kSampleDurationSeconds, &kLastSampleTimestampSeconds,
    &kSamplerTicksTotal};

// The agent itself: build, driver, NVML errors, sampling.
void CollectAgent(const Scrape& s, Exposition* out) {
  const node::NodeView& node_view = s.node_view;
  const std::string& host = s.host;
  const RenderOptions& options = s.options;
  const node::Snapshot& snapshot = s.snapshot;
  const node::SamplerStats& stats = s.stats;
  Head(out, kBuildInfo);
  out->Sample(node::family::kBuildInfo, {{"hostname", host}, {"version", options.version}}, 1);
  Head(out, kDriverUp);
  out->Sample(node::family::kDriverUp, {{"hostname", host}}, node_view.backend_error.empty() ? 1 : 0);
  Head(out, kNvmlErrorsTotal);
  for (const auto& [key, n] : snapshot.call_errors) {
    out->Sample(node::family::kNvmlErrorsTotal,
                {{"hostname", host}, {"call", key.call}, {"error", key.error}}, static_cast<double>(n));
  }
  Head(out, kSampleDurationSeconds);
  out->Sample(node::family::kSampleDurationSeconds, {{"hostname", host}},
              static_cast<double>(snapshot.tick_duration.count()) / 1e6);
  Head(out, kLastSampleTimestampSeconds);
  out->Sample(node::family::kLastSampleTimestampSeconds, {{"hostname", host}},
              std::chrono::duration<double>(node_view.taken_at.time_since_epoch()).count());
  Head(out, kSamplerTicksTotal);
  out->Sample(node::family::kSamplerTicksTotal, {{"hostname", host}}, static_cast<double>(stats.ticks));
}

}  // namespace

std::string RenderMetrics(const node::Snapshot& snapshot, const node::SamplerStats& stats,
                          const std::map<std::string, GpuCounters>& counters, const RenderOptions& options) {
  Exposition out;
  Scrape s{snapshot, snapshot.node_view,
           stats,    counters,
           options,  options.hostname.empty() ? snapshot.node_view.hostname : options.hostname};
  if (options.is_dcgm_compatible) CollectDcgm(s, &out);
  CollectGpuState(s, &out);
  CollectGpuReadings(s, &out);
  CollectGpuErrors(s, &out);
  CollectAccounting(s.node_view, s.host, s.options.currency, s.counters, &out);
  CollectProcesses(s, &out);
  CollectMigNative(s.node_view, s.host, &out);
  CollectAgent(s, &out);
  CollectNodeCounts(s.node_view, s.host, &out);
  return out.text();
}

// The families RenderLeaseFamilies renders.
constexpr Family kLeases{node::family::kLeases, "gauge", "Leases held now, by priority."};
constexpr Family kLeaseQueueLength{node::family::kLeaseQueueLength, "gauge",
                                   "Requests waiting in the lease queue."};
constexpr Family kBackfillPreemptionsTotal{
    node::family::kBackfillPreemptionsTotal, "counter",
    "Backfill leases revoked for other requests since the agent started."};
constexpr Family kBackfillGpuSecondsTotal{node::family::kBackfillGpuSecondsTotal, "counter",
                                          "GPU-seconds held by backfill leases since the agent started."};
constexpr Family kBackfillBatches{node::family::kBackfillBatches, "gauge",
                                  "Backfill batches the agent keeps, by state."};
constexpr Family kBackfillRequestsTotal{
    node::family::kBackfillRequestsTotal, "counter",
    "Batch requests finished, by outcome (done: a result; failed: an error line)."};
constexpr Family kBackfillCompletionTokensTotal{node::family::kBackfillCompletionTokensTotal, "counter",
                                                "Tokens the engines generated for backfill batches."};
constexpr Family kKubePluginRegistered{node::family::kKubePluginRegistered, "gauge",
                                       "1 while the device plugin is registered with the kubelet."};
constexpr Family kKubePodLeases{node::family::kKubePodLeases, "gauge",
                                "Leases of kind pod (GPUs the kubelet allocated to pods) held now."};
constexpr Family kKubePodResourcesUp{node::family::kKubePodResourcesUp, "gauge",
                                     "1 when the last List of the kubelet's pod resources worked."};
constexpr Family kDoctorFinding{
    node::family::kDoctorFinding, "gauge",
    "Findings of the doctor's last scheduled run, by check and severity (warning, critical)."};
constexpr std::array kLeaseFigureFamilies = {&kLeases,
                                             &kLeaseQueueLength,
                                             &kBackfillPreemptionsTotal,
                                             &kBackfillGpuSecondsTotal,
                                             &kBackfillBatches,
                                             &kBackfillRequestsTotal,
                                             &kBackfillCompletionTokensTotal,
                                             &kKubePluginRegistered,
                                             &kKubePodLeases,
                                             &kKubePodResourcesUp,
                                             &kDoctorFinding};

std::string RenderLeaseFamilies(const AgentFigures& figures, const std::string& hostname) {
  Exposition out;
  Head(&out, kLeases);
  for (const auto& [priority, count] : figures.leases_by_priority) {
    out.Sample(node::family::kLeases, {{"hostname", hostname}, {"priority", priority}},
               static_cast<double>(count));
  }
  Head(&out, kLeaseQueueLength);
  out.Sample(node::family::kLeaseQueueLength, {{"hostname", hostname}}, static_cast<double>(figures.queued));
  Head(&out, kBackfillPreemptionsTotal);
  out.Sample(node::family::kBackfillPreemptionsTotal, {{"hostname", hostname}},
             static_cast<double>(figures.backfill_preemptions));
  Head(&out, kBackfillGpuSecondsTotal);
  out.Sample(node::family::kBackfillGpuSecondsTotal, {{"hostname", hostname}}, figures.backfill_gpu_seconds);
  Head(&out, kBackfillBatches);
  for (const auto& [state, count] : figures.batches_by_state) {
    out.Sample(node::family::kBackfillBatches, {{"hostname", hostname}, {"state", state}},
               static_cast<double>(count));
  }
  Head(&out, kBackfillRequestsTotal);
  out.Sample(node::family::kBackfillRequestsTotal, {{"hostname", hostname}, {"outcome", "done"}},
             static_cast<double>(figures.batch_requests_done));
  out.Sample(node::family::kBackfillRequestsTotal, {{"hostname", hostname}, {"outcome", "failed"}},
             static_cast<double>(figures.batch_requests_failed));
  Head(&out, kBackfillCompletionTokensTotal);
  out.Sample(node::family::kBackfillCompletionTokensTotal, {{"hostname", hostname}},
             static_cast<double>(figures.batch_completion_tokens));
  if (figures.kube_plugin_registered) {
    Head(&out, kKubePluginRegistered);
    out.Sample(node::family::kKubePluginRegistered, {{"hostname", hostname}},
               *figures.kube_plugin_registered ? 1 : 0);
    Head(&out, kKubePodLeases);
    out.Sample(node::family::kKubePodLeases, {{"hostname", hostname}},
               static_cast<double>(figures.kube_pod_leases));
  }
  if (figures.kube_pod_resources_up) {
    Head(&out, kKubePodResourcesUp);
    out.Sample(node::family::kKubePodResourcesUp, {{"hostname", hostname}},
               *figures.kube_pod_resources_up ? 1 : 0);
  }
  if (figures.doctor_findings != nullptr && !figures.doctor_findings->empty()) {
    Head(&out, kDoctorFinding);
    for (const auto& [key, count] : *figures.doctor_findings) {
      out.Sample(node::family::kDoctorFinding,
                 {{"hostname", hostname}, {"check", key.first}, {"severity", key.second}},
                 static_cast<double>(count));
    }
  }
  return out.text();
}

// The family RenderLeaseMarks renders.
constexpr Family kGpuLease{node::family::kGpuLease, "gauge",
                           "1 for each GPU (or MIG instance: mig_uuid) a lease holds now, with its holder."};
constexpr Family kGpuLoan{
    node::family::kGpuLoan, "gauge",
    "1 for each GPU lent to backfill beside its holder: the loan's lease and user, and the "
    "lender's lease."};
constexpr std::array kLeaseMarkFamilies = {&kGpuLease, &kGpuLoan};

std::string RenderLeaseMarks(const node::LeaseMarks& marks, const node::NodeView& node_view,
                             const std::string& hostname) {
  if (marks.leases.empty() && marks.mig_leases.empty()) return "";
  Exposition out;
  Head(&out, kGpuLease);
  auto holder = [](Labels labels, const node::GpuLease& l) {
    labels = With(std::move(labels), "lease", std::to_string(l.id));
    labels = With(std::move(labels), "user", l.user);
    labels = With(std::move(labels), "kind", std::string(node::LeaseKindName(l.kind)));
    if (!l.slurm_job.empty()) labels = With(std::move(labels), "slurm_job", l.slurm_job);
    return labels;
  };
  bool is_lent = false;
  for (const node::GpuView& g : node_view.gpus) {
    if (auto it = marks.leases.find(g.info.index); it != marks.leases.end()) {
      out.Sample(node::family::kGpuLease, holder(NativeLabels(g, hostname), it->second), 1);
      is_lent = is_lent || it->second.lent_to != 0;
    }
    for (const node::MigInstance& m : g.sample.mig_instances) {
      if (auto it = marks.mig_leases.find(m.uuid); it != marks.mig_leases.end()) {
        out.Sample(node::family::kGpuLease,
                   holder(With(NativeLabels(g, hostname), "mig_uuid", m.uuid), it->second), 1);
      }
    }
  }
  if (!is_lent) return out.text();
  Head(&out, kGpuLoan);
  for (const node::GpuView& g : node_view.gpus) {  // Each GPU lent on its own.
    auto it = marks.leases.find(g.info.index);
    if (it == marks.leases.end() || it->second.lent_to == 0) continue;
    Labels labels = With(NativeLabels(g, hostname), "lease", std::to_string(it->second.lent_to));
    labels = With(std::move(labels), "user", it->second.lent_to_user);
    labels = With(std::move(labels), "lender", std::to_string(it->second.id));
    out.Sample(node::family::kGpuLoan, labels, 1);
  }
  return out.text();
}

// The families RenderScrapeDuration renders.
constexpr Family kScrapeDurationSeconds{node::family::kScrapeDurationSeconds, "gauge",
                                        "How long the agent took to answer the previous /metrics request."};
constexpr std::array kScrapeDurationFamilies = {&kScrapeDurationSeconds};

std::string RenderScrapeDuration(const node::Snapshot& snapshot, const RenderOptions& options,
                                 double previous_scrape_seconds) {
  Exposition out;
  std::string host = options.hostname.empty() ? snapshot.node_view.hostname : options.hostname;
  Head(&out, kScrapeDurationSeconds);
  out.Sample(node::family::kScrapeDurationSeconds, {{"hostname", host}}, previous_scrape_seconds);
  return out.text();
}

const std::vector<FamilyDoc>& NativeFamilies() {
  static const std::vector<FamilyDoc> kAll = [] {
    std::vector<FamilyDoc> all;
    for (const GpuFamily& f : NativeGpuFamilies()) all.push_back(f.doc);
    using Families = std::span<const Family* const>;
    for (Families families :
         {Families(kGpuStateFamilies), Families(kGpuReadingsFamilies), Families(kGpuErrorsFamilies),
          Families(kProcessesFamilies), Families(kAgentFamilies), Families(kLeaseFigureFamilies),
          Families(kLeaseMarkFamilies), Families(kScrapeDurationFamilies)}) {
      for (const Family* f : families) {
        all.push_back(f->Doc());
      }
    }
    for (const FamilyDoc& d : AccountingFamilies()) all.push_back(d);
    for (const FamilyDoc& d : MigNativeFamilies()) all.push_back(d);
    for (const FamilyDoc& d : NodeFamilies()) all.push_back(d);
    return all;
  }();
  return kAll;
}

const std::vector<FamilyDoc>& DcgmFamilies() {
  static const std::vector<FamilyDoc> kAll = [] {
    std::vector<FamilyDoc> all;
    for (const GpuFamily& f : DcgmGpuFamilies()) all.push_back(f.doc);
    for (const FamilyDoc& d : DcgmComputedFamilies()) all.push_back(d);
    return all;
  }();
  return kAll;
}

Labels NativeLabels(const node::GpuView& g, const std::string& host) {
  return {{"hostname", host},
          {"gpu", std::to_string(g.info.index)},
          {"uuid", g.info.uuid},
          {"model", g.info.name}};
}

}  // namespace tarmac::metrics
