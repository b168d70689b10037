// SPDX-License-Identifier: Apache-2.0
#include "store/lease_event_kinds.h"

namespace tarmac::store {

const std::vector<std::string>& LeaseEventKinds() {
  static const std::vector<std::string> kinds = {"queued",
                                                 "granted",
                                                 "released",
                                                 "cancelled",
                                                 "extended",
                                                 "expired",
                                                 "client_gone",
                                                 "reattached",
                                                 "idle_warning",
                                                 "idle_kept",
                                                 "idle_released",
                                                 "idle_terminated",
                                                 "foreign_process",
                                                 "sigterm",
                                                 "sigkill",
                                                 "signal_failed",
                                                 "zombie_terminated",
                                                 "zombie_skipped",
                                                 "refused",
                                                 "gpu_drained",
                                                 "gpu_undrained",
                                                 "preempting",
                                                 "lent",
                                                 "preempted",
                                                 "batch_submitted",
                                                 "batch_paused",
                                                 "batch_resumed",
                                                 "batch_cancelled",
                                                 "batch_done",
                                                 "batch_failed",
                                                 "batch_runner_restarted",
                                                 "doctor_finding",
                                                 "doctor_cleared",
                                                 "pod_named",
                                                 "pod_ended",
                                                 "pod_conflict",
                                                 "kube_plugin_registered",
                                                 "kube_plugin_problem",
                                                 "slurm_job_ended",
                                                 "slurm_idle_dry_run",
                                                 "slurm_idle_warn",
                                                 "slurm_idle_requeue",
                                                 "slurm_idle_cancel",
                                                 "slurm_action_failed",
                                                 "config_reload",
                                                 "mig_instance_gone",
                                                 "state_recreated"};
  return kinds;
}

}  // namespace tarmac::store
