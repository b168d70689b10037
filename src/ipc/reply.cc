// SPDX-License-Identifier: Apache-2.0
#include "ipc/reply.h"

#include <unistd.h>

namespace tarmac::ipc {

void Reply::Send(std::string line) const {
  if (!slot_) return;
  // The wake runs under the lock: the server closes what it writes to only
  // after marking every slot closed under the same lock.
  MutexLock lock(&slot_->mu);
  if (!slot_->is_open || slot_->line) return;
  slot_->line = std::move(line);
  if (slot_->wake_fd >= 0) {
    char byte = 1;
    ssize_t ignored = ::write(slot_->wake_fd, &byte, 1);
    (void)ignored;
  }
}

bool Reply::IsOpen() const {
  if (!slot_) return false;
  MutexLock lock(&slot_->mu);
  return slot_->is_open && !slot_->line;
}

}  // namespace tarmac::ipc
