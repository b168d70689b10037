// SPDX-License-Identifier: Apache-2.0
#include "ipc/method_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace tarmac::ipc {

Status MethodTable::Add(std::string name, MethodHandler handler) {
  return AddDeferring(std::move(name),
                      [handler = std::move(handler)](const Request& request, const PeerCredentials& peer,
                                                     const Reply&) -> std::optional<std::string> {
                        return handler(request, peer);
                      });
}

Status MethodTable::AddDeferring(std::string name, DeferringHandler handler) {
  if (std::any_of(methods_.begin(), methods_.end(), [&](const Method& m) { return m.name == name; })) {
    return Status::InvalidArgument(fmt::format("method {} is already in the table", name));
  }
  methods_.push_back({std::move(name), std::move(handler)});
  return Status::OK();
}

std::optional<std::string> MethodTable::Dispatch(const Request& request, const PeerCredentials& peer,
                                                 const Reply& reply) const {
  for (const Method& m : methods_) {
    if (m.name == request.method) return m.handler(request, peer, reply);
  }
  std::string known;
  for (const Method& m : methods_) known += (known.empty() ? "" : ", ") + m.name;
  return EncodeError(request.id, kErrorUnknownMethod,
                     fmt::format("unknown method \"{}\" (known: {})", request.method, known));
}

}  // namespace tarmac::ipc
