// SPDX-License-Identifier: Apache-2.0
//
// An inference engine the batch runner starts inside a backfill lease: the
// configured command under /bin/sh, in a process group of its own, with the
// lease's GPU in CUDA_VISIBLE_DEVICES (and NVIDIA_VISIBLE_DEVICES), the
// lease's TARMAC_LEASE_ID and TARMAC_LEASE_TOKEN (so that the agent counts
// it as the lease's and terminates it when the lease ends), a private port
// ("{port}" in the command, $TARMAC_ENGINE_PORT, and OLLAMA_HOST for
// `ollama serve`), OLLAMA_VULKAN=0 and CUDA_DEVICE_ORDER=PCI_BUS_ID, and its
// output appended to a log file.
//
// Thread safety: one thread per EngineProcess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/environment.h"
#include "common/result.h"

namespace tarmac::backfill {

struct EngineLaunch {
  std::string command;  // "{port}" is replaced by the port.
  // The lease's (client::LeaseEnvironment): they replace what the runner has.
  EnvironmentChanges lease_env;
  std::string log_path;
};

class EngineProcess {
 public:
  static Result<EngineProcess> Start(const EngineLaunch& launch, Clock* clock);

  pid_t pid() const { return pid_; }
  const std::string& base_url() const { return base_url_; }

  // Waits until the engine answers (IsEngineUp). kUnavailable when it
  // exited first (with its status and log), kDeadlineExceeded after
  // `timeout`, kCancelled once `give_up` says so.
  Status WaitReady(const std::string& kind, std::chrono::seconds timeout,
                   const std::function<bool()>& give_up);
  // Whether it has exited (reaped now if so).
  bool HasExited();
  // SIGTERM to its process group; SIGKILL to the group after `grace`.
  // Returns once the engine has exited.
  void Stop(std::chrono::milliseconds grace);

 private:
  Clock* clock_ = nullptr;
  pid_t pid_ = -1;
  bool is_reaped_ = false;
  int exit_status_ = 0;
  std::string base_url_;
  std::string log_path_;
};

}  // namespace tarmac::backfill
