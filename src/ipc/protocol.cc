// SPDX-License-Identifier: Apache-2.0
#include "ipc/protocol.h"

#include <fmt/format.h>

#include "common/json_fields.h"

namespace tarmac::ipc {

using nlohmann::json;

std::string EncodeResult(const json& id, const json& result) {
  json j = {{"v", kProtocolVersion}, {"id", id}, {"ok", true}, {"result", result}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string EncodeError(const json& id, std::string_view code, std::string_view message) {
  json j = {{"v", kProtocolVersion},
            {"id", id},
            {"ok", false},
            {"error", {{"code", std::string(code)}, {"message", std::string(message)}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Decoded DecodeRequest(std::string_view line) {
  Decoded d;
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    d.error_response = EncodeError(nullptr, kErrorBadRequest, "request is not a JSON object");
    return d;
  }
  json id = nullptr;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_primitive()) {
      d.error_response = EncodeError(nullptr, kErrorBadRequest, "\"id\" must be a string, number or null");
      return d;
    }
    id = *it;
  }
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer()) {
    d.error_response = EncodeError(id, kErrorBadRequest, "missing protocol version \"v\"");
    return d;
  }
  if (v->get<int64_t>() != kProtocolVersion) {
    d.error_response = EncodeError(id, kErrorUnsupportedVersion,
                                   fmt::format("this agent speaks protocol version {}", kProtocolVersion));
    return d;
  }
  auto method = j.find("method");
  if (method == j.end() || !method->is_string()) {
    d.error_response = EncodeError(id, kErrorBadRequest, "missing \"method\"");
    return d;
  }
  auto params = j.find("params");
  if (params != j.end() && !params->is_object()) {
    d.error_response = EncodeError(id, kErrorBadRequest, "\"params\" must be an object");
    return d;
  }
  d.ok = true;
  d.request.id = id;
  d.request.method = method->get<std::string>();
  if (params != j.end()) d.request.params = *params;
  return d;
}

std::string EncodeRequest(const Request& request) {
  json j = {{"v", request.version}, {"id", request.id}, {"method", request.method}};
  if (!request.params.empty()) j["params"] = request.params;
  return j.dump() + "\n";
}

Result<json> DecodeResponse(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok")) {
    return Status::Corruption("agent: malformed response");
  }
  if (j["ok"] == true && j.contains("result")) return j["result"];
  std::string code = "unknown";
  std::string message = "(no message)";
  JsonFields error = JsonFields(j, "response", JsonFields::kSkipWrongTypes).Object("error");
  error.Optional("code", &code);
  error.Optional("message", &message);
  if (code == kErrorBusy || code == kErrorUnavailable)
    return Status::Unavailable(fmt::format("agent: {}", message));
  if (code == kErrorNotFound) return Status::NotFound(message);
  if (code == kErrorPermissionDenied) return Status::PermissionDenied(message);
  if (code == kErrorNoFit) return Status::ResourceExhausted(message);
  if (code == kErrorStorage) return Status::IOError(message);
  if (code == kErrorBadRequest) return Status::InvalidArgument(message);
  if (code == kErrorInternal) return Status::Internal(message);
  return Status::InvalidArgument(fmt::format("{} ({})", message, code));
}

std::string ErrorCodeOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kIOError:
    case StatusCode::kCorruption:
      return kErrorStorage;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:  // Asked of something in the wrong state.
      return kErrorBadRequest;
    case StatusCode::kNotFound:
      return kErrorNotFound;
    case StatusCode::kPermissionDenied:
      return kErrorPermissionDenied;
    case StatusCode::kResourceExhausted:
      return kErrorNoFit;
    case StatusCode::kUnavailable:
      return kErrorUnavailable;
    default:
      return kErrorInternal;
  }
}

Result<int64_t> IdParam(const nlohmann::json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end() || !it->is_number_integer() || it->get<int64_t>() < 1) {
    return Status::InvalidArgument(fmt::format("params.{}: expected a positive integer", key));
  }
  return it->get<int64_t>();
}

}  // namespace tarmac::ipc
