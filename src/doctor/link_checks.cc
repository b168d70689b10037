// SPDX-License-Identifier: Apache-2.0
//
// Question 3: is the interconnect healthy?
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "common/cpu_list.h"
#include "doctor/checks.h"
#include "nvidia/gpu_models.h"

namespace tarmac::doctor {
namespace {

// PCIe replays since the driver loaded above which the link is suspect.
constexpr int64_t kPcieReplayWarning = 100;

int GenerationOfSpeed(double gts) {
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7) return 3;
  if (gts >= 4) return 2;
  return 1;
}

bool Overlaps(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] & b[i]) return true;
  }
  return false;
}

}  // namespace

void CheckPcie(const DoctorInputs& in, CheckOutput* out) {
  std::map<std::string, const PciGpu*> sysfs;
  if (in.pci_gpus) {
    for (const PciGpu& p : *in.pci_gpus) sysfs[p.address] = &p;
  }
  for (const node::GpuView& g : in.node_view.gpus) {
    int i = g.info.index;
    std::optional<int> width = g.sample.pcie_width;
    std::optional<int> max_width = g.info.pcie_width_max;
    std::optional<int> gen = g.sample.pcie_generation;
    std::optional<int> max_gen = g.info.pcie_generation_max;
    if (auto it = sysfs.find(NormalizePciAddress(g.info.pci_bus_id)); it != sysfs.end()) {
      const PciGpu& p = *it->second;
      if (!width) width = p.link_width;
      if (!max_width) max_width = p.max_link_width;
      if (!gen && p.link_speed_gts) gen = GenerationOfSpeed(*p.link_speed_gts);
      if (!max_gen && p.max_link_speed_gts) max_gen = GenerationOfSpeed(*p.max_link_speed_gts);
    }
    if (width && max_width && *width < *max_width) {
      out->findings.push_back(MakeFinding(
          "pcie", *width * 2 <= *max_width ? Severity::kCritical : Severity::kWarning, i,
          fmt::format("gpu {}'s PCIe link runs at x{} of x{}", i, *width, *max_width),
          fmt::format("link width x{}, maximum x{}{}", *width, *max_width,
                      gen ? fmt::format(", Gen{}", *gen) : std::string()),
          "the link trained narrower than it can: host-to-GPU copies run at a fraction of their speed",
          "reseat the GPU or its riser; check the slot's bifurcation setting in the BIOS; a link that trains "
          "narrow again points to the slot, riser or board"));
    }
    if (int64_t replays = g.sample.pcie_replays.value_or(0); replays >= kPcieReplayWarning) {
      out->findings.push_back(MakeFinding("pcie", Severity::kWarning, i,
                                          fmt::format("gpu {}'s PCIe link resent {} packets", i, replays),
                                          fmt::format("{} PCIe replays since the driver loaded", replays),
                                          "the link corrupts packets and resends them: signal integrity "
                                          "(slot, riser, cable) is poor, transfers "
                                          "are slower, and the link may downtrain or drop (Xid 79)",
                                          "reseat the GPU and its riser; check the BIOS PCIe settings; watch "
                                          "whether the count keeps growing"));
    }
    bool is_busy = g.sample.utilization_gpu_ratio.value_or(0) >= 0.3;
    if (gen && max_gen && *gen < *max_gen && is_busy) {
      out->findings.push_back(
          MakeFinding("pcie", Severity::kWarning, i,
                      fmt::format("gpu {}'s PCIe link runs at Gen{} of Gen{} under load", i, *gen, *max_gen),
                      fmt::format("Gen{} while {:.0f} % busy; maximum Gen{}", *gen,
                                  *g.sample.utilization_gpu_ratio * 100, *max_gen),
                      "a busy GPU's link should run at full speed (an idle one slows down to save power, "
                      "which is normal)",
                      "check the BIOS PCIe speed setting and the riser; reseat the GPU"));
    }
  }
}

void CheckNvlink(const DoctorInputs& in, CheckOutput* out) {
  for (const node::GpuView& g : in.node_view.gpus) {
    const node::GpuSample& s = g.sample;
    int64_t crc = s.nvlink_crc_errors.value_or(0);
    int64_t replay = s.nvlink_replay_errors.value_or(0);
    int64_t recovery = s.nvlink_recovery_errors.value_or(0);
    if (crc + replay + recovery > 0) {
      out->findings.push_back(MakeFinding(
          "nvlink", recovery > 0 ? Severity::kCritical : Severity::kWarning, g.info.index,
          fmt::format("gpu {}: NVLink errors ({} CRC, {} replay, {} recovery)", g.info.index, crc, replay,
                      recovery),
          fmt::format(
              "totals over its links since the driver loaded: {} CRC data errors, {} replays, {} link "
              "recoveries",
              crc, replay, recovery),
          recovery > 0
              ? "a link had to retrain: traffic stalled, and a link that keeps recovering will go down"
              : "the links resend corrupted data: slower GPU-to-GPU traffic, and a sign of a link going bad",
          "nvidia-smi nvlink -e -i N shows which link; reseat the GPU or NVLink bridge at the next "
          "maintenance; "
          "RMA if the counts keep growing"));
    }
  }
  for (const node::GpuView& g : in.node_view.gpus) {
    const std::vector<bool>& links = g.sample.nvlink_active;
    int up = static_cast<int>(std::count(links.begin(), links.end(), true));
    int total = static_cast<int>(links.size());
    int expected = nvidia::ExpectedNvlinkLinks(g.info.name);
    if (total > 0 && total < expected) {
      out->findings.push_back(MakeFinding(
          "nvlink", Severity::kWarning, g.info.index,
          fmt::format("gpu {} shows {} of the {} NVLinks an {} has", g.info.index, total, expected,
                      g.info.name),
          fmt::format("NVML lists {} links", total),
          "links the board should have are missing: GPU-to-GPU bandwidth is short of what the model gives",
          "check the NVLink bridges or the baseboard's NVSwitches (nvidia-smi nvlink -s), and the fabric "
          "manager "
          "(systemctl status nvidia-fabricmanager)"));
    }
    if (total == 0 || up == 0 || up == total) continue;  // No NVLink, none in use, or all up.
    std::vector<int> down;
    for (int l = 0; l < total; ++l) {
      if (!links[static_cast<size_t>(l)]) down.push_back(l);
    }
    out->findings.push_back(MakeFinding(
        "nvlink", Severity::kCritical, g.info.index,
        fmt::format("gpu {}: {} of {} NVLinks are down", g.info.index, down.size(), total),
        fmt::format("links down: {}", fmt::join(down, ", ")),
        "traffic between GPUs (all-reduce in training) falls back to fewer links or to PCIe: much slower",
        "nvidia-smi nvlink -s and -e show the state and error counters; reset the GPUs; reseat the GPU or "
        "the "
        "NVLink bridge; RMA if a link stays down"));
  }
}

namespace {

// The highest CPU a mask (common/cpu_list.h) names; -1 for none.
int HighestCpu(const std::vector<uint64_t>& mask) {
  for (size_t w = mask.size(); w-- > 0;) {
    if (mask[w] != 0) return static_cast<int>(w * 64 + 63 - static_cast<size_t>(__builtin_clzll(mask[w])));
  }
  return -1;
}

}  // namespace

void CheckNuma(const DoctorInputs& in, CheckOutput* out) {
  std::vector<int> elsewhere;  // GPUs near CPUs this host does not have.
  for (const node::GpuView& g : in.node_view.gpus) {
    if (!g.info.cpu_affinity || g.info.cpu_affinity->empty()) continue;
    Result<std::vector<uint64_t>> near = ParseCpuList(*g.info.cpu_affinity);
    if (!near.ok()) continue;
    // Like with like: a GPU near CPUs this host does not have (a simulated
    // GPU, another machine's reading) says nothing of this host's processes.
    if (in.cpu && HighestCpu(near.value()) >= in.cpu->cpu_count) {
      elsewhere.push_back(g.info.index);
      continue;
    }
    for (const node::ProcessView& p : g.processes) {
      auto it = in.processes.find(p.process.pid);
      if (it == in.processes.end() || !it->second.cpus_allowed) continue;
      Result<std::vector<uint64_t>> allowed = ParseCpuList(*it->second.cpus_allowed);
      if (!allowed.ok() || Overlaps(allowed.value(), near.value())) continue;
      out->findings.push_back(MakeFinding(
          "numa", Severity::kWarning, g.info.index,
          fmt::format("pid {} on gpu {} may only run on CPUs far from the GPU", p.process.pid, g.info.index),
          fmt::format("{} ({}): allowed CPUs {}; gpu {} is near CPUs {}{}", p.process.pid,
                      p.details.name.empty() ? "?" : p.details.name, *it->second.cpus_allowed, g.info.index,
                      *g.info.cpu_affinity,
                      g.info.numa_node ? fmt::format(" (NUMA node {})", *g.info.numa_node) : std::string()),
          "every copy to and from the GPU crosses the socket interconnect, and host memory is remote: slower "
          "input and transfers",
          "pin the job to the GPU's NUMA node (numactl --cpunodebind, or the scheduler's CPU binding); "
          "tarmac run "
          "hands out GPUs with their CPU list"));
      out->findings.back().command = p.details.command;
    }
  }
  if (!elsewhere.empty()) {
    out->skipped.push_back(
        {"numa",
         fmt::format("gpu {} {} near CPUs this host ({} CPUs) does not have: a simulated GPU, or another "
                     "machine's reading",
                     fmt::join(elsewhere, ", "), elsewhere.size() == 1 ? "is" : "are", in.cpu->cpu_count)});
  }
}

namespace {

// "0-3, 6": GPU indices in order, runs of three or more as ranges.
std::string IndexRuns(std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  std::vector<std::string> runs;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (j - i >= 2) {
      runs.push_back(fmt::format("{}-{}", indices[i], indices[j]));
    } else {
      for (size_t k = i; k <= j; ++k) runs.push_back(std::to_string(indices[k]));
    }
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(runs, ", "));
}

}  // namespace

std::string TopologySummary(const node::NodeView& node_view) {
  // GPUs joined by NVLink, directly or through others (by PCI address).
  std::map<std::string, int> index_of;
  for (const node::GpuView& g : node_view.gpus) index_of[g.info.pci_bus_id] = g.info.index;
  std::map<int, int> group;  // GPU index -> the lowest index it is joined to.
  std::function<int(int)> root = [&](int i) { return group[i] == i ? i : group[i] = root(group[i]); };
  for (const node::GpuView& g : node_view.gpus) group.emplace(g.info.index, g.info.index);
  for (const node::GpuView& g : node_view.gpus) {
    for (const std::string& peer : g.info.nvlink_peer_bus_ids) {
      auto it = index_of.find(peer);
      if (it == index_of.end()) continue;
      int a = root(g.info.index), b = root(it->second);
      group[std::max(a, b)] = std::min(a, b);
    }
  }
  std::map<int, std::vector<int>> joined;
  std::vector<int> alone;
  for (const auto& [index, unused] : group) joined[root(index)].push_back(index);
  std::vector<std::string> parts;
  for (const auto& [first, members] : joined) {
    if (members.size() > 1) {
      parts.push_back(fmt::format("NVLink joins GPU {}", IndexRuns(members)));
    } else {
      alone.push_back(first);
    }
  }
  if (!alone.empty()) parts.push_back(fmt::format("no NVLink peer: GPU {}", IndexRuns(alone)));
  std::map<std::string, std::vector<int>> by_numa;  // "NUMA node 0 (CPUs 0-55)" -> GPUs.
  for (const node::GpuView& g : node_view.gpus) {
    std::string where =
        g.info.numa_node ? fmt::format("NUMA node {}", *g.info.numa_node) : "NUMA node unknown";
    if (g.info.cpu_affinity) where += fmt::format(" (CPUs {})", *g.info.cpu_affinity);
    by_numa[where].push_back(g.info.index);
  }
  for (const auto& [where, gpus] : by_numa)
    parts.push_back(fmt::format("GPU {} on {}", IndexRuns(gpus), where));
  return fmt::format("{}", fmt::join(parts, "; "));
}

void CheckTopology(const DoctorInputs& in, CheckOutput* out) {
  if (in.node_view.gpus.size() < 2) return;
  int nvlinked = 0;
  for (const node::GpuView& g : in.node_view.gpus) nvlinked += g.info.nvlink_peer_bus_ids.empty() ? 0 : 1;
  out->findings.push_back(MakeFinding(
      "topology", Severity::kInfo, std::nullopt,
      fmt::format("{} GPUs, {} with NVLink peers", in.node_view.gpus.size(), nvlinked),
      TopologySummary(in.node_view) + " (`nvidia-smi topo -m` prints the matrix)",
      "how the GPUs reach each other: multi-GPU jobs run best on GPUs joined by NVLink, or at least within "
      "one "
      "NUMA node",
      "ask for GPUs that are NVLink peers (tarmac run --gpus N places jobs so)"));
}

}  // namespace tarmac::doctor
