// SPDX-License-Identifier: Apache-2.0
#include "ipc/reply.h"

namespace tarmac::ipc {

void Reply::Send(std::string line) const {
  if (!slot_) return;
  // The wake runs under the lock: the server closes what it writes to only
  // after marking every slot closed under the same lock.
  MutexLock lock(&slot_->mu);
  if (!slot_->is_open || slot_->line) return;
  slot_->line = std::move(line);
  if (slot_->wake) slot_->wake();
}

bool Reply::IsOpen() const {
  if (!slot_) return false;
  MutexLock lock(&slot_->mu);
  return slot_->is_open && !slot_->line;
}

}  // namespace tarmac::ipc
