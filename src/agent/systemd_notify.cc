// SPDX-License-Identifier: Apache-2.0
#include "agent/systemd_notify.h"

#include <dlfcn.h>

#include <cstdlib>

namespace tarmac::agent {

SystemdNotifier::SystemdNotifier(Logger* logger) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || *socket == '\0') return;
  library_ = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    logger->Log(LogLevel::kWarning, "agent: NOTIFY_SOCKET is set but libsystemd.so.0 does not load: {}",
                dlerror());
    return;
  }
  notify_ = reinterpret_cast<int (*)(int, const char*)>(dlsym(library_, "sd_notify"));
  auto watchdog_enabled =
      reinterpret_cast<int (*)(int, unsigned long*)>(dlsym(library_, "sd_watchdog_enabled"));
  if (watchdog_enabled != nullptr) has_watchdog_ = watchdog_enabled(0, nullptr) > 0;
}

SystemdNotifier::~SystemdNotifier() {
  if (library_ != nullptr) dlclose(library_);
}

void SystemdNotifier::Notify(const char* state) const {
  if (notify_ != nullptr) notify_(0, state);
}

}  // namespace tarmac::agent
