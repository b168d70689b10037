// SPDX-License-Identifier: Apache-2.0
#include "doctor/playbook.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/closest_name.h"

namespace tarmac::doctor {

const std::vector<CheckInfo>& AllChecks() {
  static const std::vector<CheckInfo> checks = {
      {"driver", Question::kGpus, "NVML opens; library and driver versions agree", CheckDriver},
      {"visibility", Question::kGpus, "every NVIDIA GPU on the PCI bus is visible and readable through NVML",
       CheckVisibility},
      {"throttle", Question::kGpus,
       "clock throttling over a window and its reasons; thermal and power margins", CheckThrottle},
      {"ecc", Question::kGpus, "uncorrectable ECC errors, row remapping pending or failed", CheckEcc},
      {"xid", Question::kGpus, "Xid errors in the kernel log, with what each means and what to do", CheckXid},
      {"persistence", Question::kGpus, "persistence mode on", CheckPersistence},
      {"sharing", Question::kGpus, "several processes sharing one GPU", CheckSharing},
      {"held_idle", Question::kGpus, "GPU memory held at 0 % SM", CheckHeldIdle},
      {"starved", Question::kPipeline,
       "GPUs working in bursts with idle gaps between (waiting for input), from the agent's readings",
       CheckStarved},
      {"cpu", Question::kPipeline, "CPU saturation, a hot core, steal and iowait over a window", CheckCpu},
      {"memory", Question::kPipeline, "available host memory, swap in use, huge pages", CheckMemory},
      {"storage", Question::kPipeline, "read throughput of --storage PATH (direct I/O, a bounded file)",
       CheckStorage},
      {"network", Question::kPipeline, "throughput to the iperf3 server --network HOST[:PORT]", CheckNetwork},
      {"pcie", Question::kInterconnect, "PCIe link width and generation against their maximum; replays",
       CheckPcie},
      {"nvlink", Question::kInterconnect, "NVLinks down; CRC, replay and recovery errors", CheckNvlink},
      {"numa", Question::kInterconnect, "GPU processes allowed only on CPUs far from their GPU", CheckNuma},
      {"topology", Question::kInterconnect, "the GPU-to-GPU matrix (nvidia-smi topo -m)", CheckTopology},
      {"allocation", Question::kScheduler,
       "processes outside their CUDA_VISIBLE_DEVICES or on another user's lease", CheckAllocation},
      {"cpu_limit", Question::kScheduler, "GPU processes whose cgroup allows less than one CPU per GPU",
       CheckCpuLimits},
      {"mig", Question::kScheduler, "a MIG mode change pending a GPU reset", CheckMig},
      {"mig_empty", Question::kScheduler, "MIG instances no process has run in for a day (history)",
       CheckMigEmpty},
      {"containers", Question::kScheduler, "the container runtime can hand GPUs to containers",
       CheckContainers},
  };
  return checks;
}

const CheckInfo* FindCheck(std::string_view name) {
  for (const CheckInfo& c : AllChecks()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

Status ValidateSelection(const Selection& selection) {
  std::vector<std::string> known;
  for (Question q : kQuestions) known.push_back(QuestionName(q));
  for (const CheckInfo& c : AllChecks()) known.push_back(c.name);
  for (const std::set<std::string>* names : {&selection.only, &selection.skip}) {
    for (const std::string& n : *names) {
      if (std::find(known.begin(), known.end(), n) == known.end()) {
        return Status::InvalidArgument(fmt::format("{}: unknown check '{}'{} (known: {})",
                                                   names == &selection.only ? "--only" : "--skip", n,
                                                   DidYouMean(n, known), fmt::join(known, ", ")));
      }
    }
  }
  return Status::OK();
}

bool IsSelected(const CheckInfo& check, const Selection& selection) {
  auto named = [&](const std::set<std::string>& names) {
    return names.count(check.name) > 0 || names.count(QuestionName(check.question)) > 0;
  };
  if (!selection.only.empty() && !named(selection.only)) return false;
  return !named(selection.skip);
}

bool IsQuestionSelected(Question question, const Selection& selection) {
  for (const CheckInfo& c : AllChecks()) {
    if (c.question == question && IsSelected(c, selection)) return true;
  }
  return false;
}

DoctorResult RunPlaybook(const DoctorInputs& inputs, const Selection& selection) {
  DoctorResult r;
  r.hostname = inputs.hostname;
  r.through_agent = inputs.through_agent;
  r.gpu_count = inputs.node_view.gpus.size();
  for (Question q : kQuestions) {
    std::vector<Finding> found;
    bool any = false;
    for (const CheckInfo& c : AllChecks()) {
      if (c.question != q) continue;
      if (!IsSelected(c, selection)) {
        // Said for --skip; checks left out by --only go unmentioned.
        if (selection.skip.count(c.name) || selection.skip.count(QuestionName(q)))
          r.skipped.push_back({c.name, "--skip"});
        continue;
      }
      any = true;
      CheckOutput out;
      c.run(inputs, &out);
      bool has_problem = false;
      for (const Finding& f : out.findings) has_problem = has_problem || f.severity >= Severity::kWarning;
      bool was_skipped = std::any_of(out.skipped.begin(), out.skipped.end(),
                                     [&](const Skipped& s) { return s.check == c.name; });
      if (!has_problem && !was_skipped && !out.is_not_asked) r.passed.push_back(c.name);
      for (Finding& f : out.findings) {
        f.question = q;
        found.push_back(std::move(f));
      }
      r.skipped.insert(r.skipped.end(), out.skipped.begin(), out.skipped.end());
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
    Severity verdict = Severity::kOk;
    for (const Finding& f : found) verdict = std::max(verdict, f.severity);
    if (any) r.verdicts[q] = verdict;
    r.worst = std::max(r.worst, verdict);
    r.findings.insert(r.findings.end(), found.begin(), found.end());
  }
  return r;
}

int ExitCodeOf(Severity worst) {
  switch (worst) {
    case Severity::kWarning:
      return kExitDoctorWarning;
    case Severity::kCritical:
      return kExitDoctorCritical;
    default:
      return 0;
  }
}

}  // namespace tarmac::doctor
