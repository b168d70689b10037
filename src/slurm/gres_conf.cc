// SPDX-License-Identifier: Apache-2.0
#include "slurm/gres_conf.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

namespace tarmac::slurm {

std::string GresType(const std::string& model) {
  std::string out;
  for (char c : model) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "gpu" : out;
}

namespace {

// "gpu0/gi1/access 12" -> {"gpu0/gi1/access": 12}.
std::map<std::string, int> ParseMigMinors(const std::string& text) {
  std::map<std::string, int> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    char* rest = nullptr;
    long minor = std::strtol(line.c_str() + space + 1, &rest, 10);
    if (rest == line.c_str() + space + 1 || minor < 0 || minor > 1 << 20) continue;
    out[line.substr(0, space)] = static_cast<int>(minor);
  }
  return out;
}

}  // namespace

std::string RenderGresConf(const node::NodeView& node_view, const std::string& node,
                           const std::string& dev_dir, const std::optional<std::string>& mig_minors) {
  std::map<std::string, int> minors = mig_minors ? ParseMigMinors(*mig_minors) : std::map<std::string, int>();
  std::string out = fmt::format(
      "# gres.conf for {}, from `tarmac slurm gres-conf` ({} GPU{}, driver {}).\n"
      "# Cores= are the CPUs near each GPU (its NVML CPU affinity); Links= whether NVLink joins\n"
      "# it to each GPU in this order (1 joined, 0 not, -1 itself).\n",
      node, node_view.gpus.size(), node_view.gpus.size() == 1 ? "" : "s",
      node_view.system.driver_version.empty() ? "unknown" : node_view.system.driver_version);
  if (node_view.gpus.empty()) return out + "# No GPU was found: nothing to declare.\n";
  std::map<std::string, size_t> by_bus;
  for (size_t i = 0; i < node_view.gpus.size(); ++i) by_bus[node_view.gpus[i].info.pci_bus_id] = i;
  std::map<std::string, int> count_by_type;
  for (size_t i = 0; i < node_view.gpus.size(); ++i) {
    const node::GpuInfo& g = node_view.gpus[i].info;
    int minor = g.minor_number.value_or(g.index);
    const node::GpuSample& sample = node_view.gpus[i].sample;
    if (!sample.mig_instances.empty()) {  // MIG: the instances, not the GPU.
      for (const node::MigInstance& m : sample.mig_instances) {
        std::string gi = fmt::format("gpu{}/gi{}/access", minor, m.gpu_instance_id);
        std::string ci =
            fmt::format("gpu{}/gi{}/ci{}/access", minor, m.gpu_instance_id, m.compute_instance_id);
        if (minors.count(gi) == 0 || minors.count(ci) == 0) {
          out += fmt::format(
              "# GPU {} MIG {} (GPU instance {}): left out, no capability minors for it{}\n", g.index,
              m.profile, m.gpu_instance_id,
              mig_minors ? " in mig-minors" : " (/proc/driver/nvidia-caps/mig-minors unreadable)");
          continue;
        }
        count_by_type[m.profile]++;
        std::string line = fmt::format(
            "NodeName={} Name=gpu Type={} "
            "MultipleFiles={}/nvidia{},{}/nvidia-caps/nvidia-cap{},{}/nvidia-caps/nvidia-cap{}",
            node, m.profile, dev_dir, minor, dev_dir, minors[gi], dev_dir, minors[ci]);
        if (g.cpu_affinity && !g.cpu_affinity->empty()) line += " Cores=" + *g.cpu_affinity;
        out += line + "\n";
      }
      continue;
    }
    std::string type = GresType(g.name);
    count_by_type[type]++;
    std::vector<int> links(node_view.gpus.size(), 0);
    bool has_links = false;
    for (const std::string& bus : g.nvlink_peer_bus_ids) {
      auto peer = by_bus.find(bus);
      if (peer == by_bus.end() || peer->second == i) continue;
      links[peer->second] = 1;  // Joined; Slurm ranks by it.
      has_links = true;
    }
    std::string line =
        fmt::format("NodeName={} Name=gpu Type={} File={}/nvidia{}", node, type, dev_dir, minor);
    if (g.cpu_affinity && !g.cpu_affinity->empty()) line += " Cores=" + *g.cpu_affinity;
    if (has_links) {
      std::string l;
      for (size_t j = 0; j < links.size(); ++j)
        l += (j == 0 ? "" : ",") + std::to_string(j == i ? -1 : links[j]);
      line += " Links=" + l;
    }
    out += line + "\n";
  }
  std::string gres;
  for (const auto& [type, n] : count_by_type)
    gres += (gres.empty() ? "" : ",") + fmt::format("gpu:{}:{}", type, n);
  out += fmt::format("# slurm.conf: GresTypes=gpu, and on this node's line: NodeName={} ... Gres={}\n", node,
                     gres);
  return out;
}

}  // namespace tarmac::slurm
