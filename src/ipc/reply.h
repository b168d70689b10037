// SPDX-License-Identifier: Apache-2.0
//
// Reply: a response owed to one caller, sent later. A method that cannot
// answer at once (lease.wait: "tell me the moment my request is granted")
// keeps the Reply and sends through it when it can, from any thread; the
// server holds the caller's connection open until then, without its idle
// timeout. Sending twice sends once; sending after the caller hung up, or
// after the server stopped, does nothing.
//
// Thread safety: Send and IsOpen from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"

namespace tarmac::ipc {

class Reply {
 public:
  // The server's side of one owed response.
  struct Slot {
    Slot() = default;
    explicit Slot(int fd) : wake_fd(fd) {}

    Mutex mu;
    std::optional<std::string> line GUARDED_BY(mu);  // Set once by Send.
    bool is_open GUARDED_BY(mu) = true;              // False once the caller or the server is gone.
    int wake_fd GUARDED_BY(mu) = -1;                 // Written to tell the server a line is ready.
  };

  Reply() = default;
  explicit Reply(std::shared_ptr<Slot> slot) : slot_(std::move(slot)) {}

  // Sends `line` (a whole response line, ipc::EncodeResult/EncodeError).
  void Send(std::string line) const;
  // False when nobody will read a response any more (or no slot).
  bool IsOpen() const;

 private:
  std::shared_ptr<Slot> slot_;
};

}  // namespace tarmac::ipc
