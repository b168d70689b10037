// SPDX-License-Identifier: Apache-2.0
//
// The agent's API methods in one table: each name and the handler that
// answers it. Who may call a method is the handler's to decide, per call:
// every caller is who SO_PEERCRED says, and what it may change depends on
// whose lease or process it names (leases/callers.h). The server dispatches from it, the
// `unknown_method` answer lists its names, and a test checks it against
// docs/protocol.md, so a method cannot be served without being documented.
//
// Thread safety: fill it before serving; Dispatch may then run on any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "ipc/protocol.h"
#include "ipc/reply.h"

namespace tarmac::ipc {

// The response line for a request (ipc::EncodeResult / EncodeError).
using MethodHandler = std::function<std::string(const Request&, const PeerCredentials&)>;
// The response line now, or nothing: the answer is sent later through the
// Reply (reply.h).
using DeferringHandler =
    std::function<std::optional<std::string>(const Request&, const PeerCredentials&, const Reply&)>;

struct Method {
  std::string name;
  DeferringHandler handler;
};

class MethodTable {
 public:
  // kInvalidArgument when `name` is already in the table.
  Status Add(std::string name, MethodHandler handler);
  // A method that may answer later, through the Reply.
  Status AddDeferring(std::string name, DeferringHandler handler);
  // The handler's answer, or unknown_method naming every method there is;
  // nothing when the handler answers later through `reply`.
  std::optional<std::string> Dispatch(const Request& request, const PeerCredentials& peer,
                                      const Reply& reply = Reply()) const;
  // In the order they were added.
  const std::vector<Method>& methods() const { return methods_; }

 private:
  std::vector<Method> methods_;
};

}  // namespace tarmac::ipc
