// SPDX-License-Identifier: Apache-2.0
//
// The agent's local API, as pure functions (docs/protocol.md): requests and
// responses are single lines of JSON over a Unix stream socket.
//
//   -> {"v":1,"id":7,"method":"status"}
//   <- {"v":1,"id":7,"ok":true,"result":{...}}
//   <- {"v":1,"id":7,"ok":false,"error":{"code":"unknown_method","message":"..."}}
//
// Decoding never throws; every malformed request gets a structured error.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tarmac::ipc {

inline constexpr int kProtocolVersion = 1;

// Who is calling, as the kernel says (SO_PEERCRED).
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct Request {
  int version = kProtocolVersion;
  nlohmann::json id;  // Echoed back; null when absent.
  std::string method;
  nlohmann::json params = nlohmann::json::object();
};

// Error codes on the wire.
inline constexpr const char* kErrorBadRequest = "bad_request";
inline constexpr const char* kErrorUnsupportedVersion = "unsupported_version";
inline constexpr const char* kErrorUnknownMethod = "unknown_method";
inline constexpr const char* kErrorTooLarge = "request_too_large";
inline constexpr const char* kErrorBusy = "busy";
inline constexpr const char* kErrorUnavailable = "unavailable";
inline constexpr const char* kErrorNotFound = "not_found";
inline constexpr const char* kErrorPermissionDenied = "permission_denied";
inline constexpr const char* kErrorNoFit = "no_fit";  // lease.request with wait=false: nothing fits now.
inline constexpr const char* kErrorInternal = "internal";
// A lease or queue change that could not be saved, and so was not made.
inline constexpr const char* kErrorStorage = "storage_unavailable";

// Parses one request line (without the newline). On failure returns the
// error response to send instead (with the id when one could be read).
struct Decoded {
  bool ok = false;
  Request request;
  std::string error_response;  // When !ok: an encoded response line.
};
Decoded DecodeRequest(std::string_view line);

std::string EncodeRequest(const Request& request);

// Response lines, each ending in '\n'.
std::string EncodeResult(const nlohmann::json& id, const nlohmann::json& result);
std::string EncodeError(const nlohmann::json& id, std::string_view code, std::string_view message);
// The error code (kError*) for a method's failed Status.
std::string ErrorCodeOf(const Status& s);

// params[key] as a positive integer (an id, a pid); kInvalidArgument
// naming it otherwise.
Result<int64_t> IdParam(const nlohmann::json& params, const char* key = "id");

// Longest `recent_window_seconds` a status request may ask for.
inline constexpr int64_t kMaxRecentWindowSeconds = 600;

// Client side: parses a response line. kUnavailable/kInvalidArgument with the
// agent's message on an error response; kCorruption for a malformed line.
Result<nlohmann::json> DecodeResponse(std::string_view line);

}  // namespace tarmac::ipc
