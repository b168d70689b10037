// SPDX-License-Identifier: Apache-2.0
#include "ipc/method_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace tarmac::ipc {

const char* AccessName(Access access) {
  return access == Access::kOwnerOrAdmin ? "owner or admin" : "anyone";
}

Status MethodTable::Add(std::string name, Access access, MethodHandler handler) {
  return AddDeferring(std::move(name), access,
                      [handler = std::move(handler)](const Request& request, const PeerCredentials& peer,
                                                    const Reply&) -> std::optional<std::string> {
                        return handler(request, peer);
                      });
}

Status MethodTable::AddDeferring(std::string name, Access access, DeferringHandler handler) {
  if (std::any_of(methods_.begin(), methods_.end(), [&](const Method& m) { return m.name == name; })) {
    return Status::InvalidArgument(fmt::format("method {} is already in the table", name));
  }
  methods_.push_back({std::move(name), access, std::move(handler)});
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
