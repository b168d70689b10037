// SPDX-License-Identifier: Apache-2.0
//
// Talks to systemd through libsystemd's sd_notify, loaded with dlopen only
// when systemd asked for notifications (NOTIFY_SOCKET is set): the CLI
// commands, which share the binary, do not pay for loading libsystemd and its
// seven dependencies at every start. Without NOTIFY_SOCKET, or without
// libsystemd.so.0, every call is a no-op.
//
// Thread safety: Notify may be called from any thread after construction.
#pragma once

#include <memory>
#include <string>

#include "common/log.h"

namespace tarmac::agent {

class SystemdNotifier {
 public:
  explicit SystemdNotifier(Logger* logger);
  ~SystemdNotifier();
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  // sd_notify(0, state): "READY=1", "WATCHDOG=1", "RELOADING=1", ...
  void Notify(const char* state) const;

  // True when systemd runs a watchdog for this process.
  bool has_watchdog() const { return has_watchdog_; }

 private:
  void* library_ = nullptr;
  int (*notify_)(int, const char*) = nullptr;
  bool has_watchdog_ = false;
};

}  // namespace tarmac::agent
