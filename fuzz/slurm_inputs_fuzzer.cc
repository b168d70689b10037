// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: what the Slurm commands read from outside: a job
// cgroup's devices.list, SLURM_JOB_GPUS, and /proc/driver/nvidia-caps/
// mig-minors for gres.conf. The input is split at NUL bytes into the three.
// Results: GPU indices sorted, unique and below 255 from devices.list;
// indices or an error naming the variable from the environment; gres.conf
// lines that are comments or NodeName= lines, one per line.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "slurm/gres_conf.h"
#include "slurm/job_request.h"

namespace {

// One H100 split into a 3g.40gb and a 1g.10gb, and one whole.
tarmac::node::NodeView SplitNode() {
  tarmac::node::NodeView f;
  f.gpus.resize(2);
  for (int i = 0; i < 2; ++i) {
    f.gpus[static_cast<size_t>(i)].info.index = i;
    f.gpus[static_cast<size_t>(i)].info.name = "NVIDIA H100 80GB HBM3";
    f.gpus[static_cast<size_t>(i)].info.pci_bus_id = "00000000:0" + std::to_string(i) + ":00.0";
  }
  tarmac::node::MigInstance m;
  m.profile = "3g.40gb";
  m.gpu_instance_id = 1;
  f.gpus[0].sample.mig_instances.push_back(m);
  m.profile = "1g.10gb";
  m.gpu_instance_id = 2;
  f.gpus[0].sample.mig_instances.push_back(m);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts(3);
  size_t part = 0;
  for (char c : text) {
    if (c == '\0' && part < 2) {
      ++part;
    } else {
      parts[part] += c;
    }
  }

  std::vector<int> gpus = tarmac::slurm::GpusOfDevicesList(parts[0]);
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] < 0 || gpus[i] >= 255 || (i > 0 && gpus[i] <= gpus[i - 1])) __builtin_trap();
  }

  tarmac::Result<std::vector<int>> job = tarmac::slurm::JobGpus({{"SLURM_JOB_GPUS", parts[1]}});
  if (job.ok()) {
    for (int g : job.value()) {
      if (g < 0 || g > 9999) __builtin_trap();
    }
  } else if (job.status().message().find("SLURM_JOB_GPUS") == std::string::npos) {
    __builtin_trap();
  }

  static const tarmac::node::NodeView kNode = SplitNode();
  std::string conf = tarmac::slurm::RenderGresConf(kNode, "n1", "/dev", parts[2]);
  size_t at = 0;
  while (at < conf.size()) {
    size_t end = conf.find('\n', at);
    if (end == std::string::npos) __builtin_trap();  // Every line ends.
    std::string_view line(conf.data() + at, end - at);
    if (line.rfind("#", 0) != 0 && line.rfind("NodeName=n1 Name=gpu Type=", 0) != 0) __builtin_trap();
    at = end + 1;
  }
  return 0;
}
