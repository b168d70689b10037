// SPDX-License-Identifier: Apache-2.0
#include "ipc/protocol.h"

#include <fmt/format.h>

#include "fleet/fleet_json.h"

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

std::string Handle(const Request& request, const PeerCredentials& peer, const AgentInfo& agent,
                   const fleet::Snapshot* snapshot, const fleet::SamplerStats* stats,
                   const fleet::UtilizationHistory* history) {
  if (request.method == "hello") {
    json sampler = json::object();
    if (stats != nullptr) {
      sampler = {{"ticks", stats->ticks},
                 {"slow_ticks", stats->slow_ticks},
                 {"last_tick_seconds", static_cast<double>(stats->last_tick_duration.count()) / 1e6},
                 {"max_lateness_seconds", static_cast<double>(stats->max_lateness.count()) / 1e6},
                 {"p99_lateness_seconds", static_cast<double>(stats->p99_lateness.count()) / 1e6},
                 {"attaches", stats->attaches},
                 {"xid_events", stats->xid_events},
                 {"mig_config_changes", stats->mig_config_changes}};
    }
    return EncodeResult(request.id, {{"agent_version", agent.version},
                                     {"sampler", sampler},
                                     {"agent_pid", agent.pid},
                                     {"backend", agent.backend},
                                     {"started_at_unix", agent.started_at_unix},
                                     {"protocol_version", kProtocolVersion},
                                     {"store", agent.store_status ? agent.store_status() : json(nullptr)},
                                     {"lease_state", agent.lease_state ? agent.lease_state() : json(nullptr)},
                                     {"peer", {{"pid", peer.pid}, {"uid", peer.uid}, {"gid", peer.gid}}}});
  }
  if (request.method == "status") {
    std::optional<std::chrono::seconds> window;
    if (auto w = request.params.find("recent_window_seconds"); w != request.params.end()) {
      if (!w->is_number_integer() || w->get<int64_t>() < 1 || w->get<int64_t>() > kMaxRecentWindowSeconds) {
        return EncodeError(request.id, kErrorBadRequest,
                           fmt::format("params.recent_window_seconds: expected an integer from 1 to {}",
                                       kMaxRecentWindowSeconds));
      }
      window = std::chrono::seconds(w->get<int64_t>());
    }
    if (snapshot == nullptr) return EncodeError(request.id, kErrorUnavailable, "no sample taken yet");
    std::shared_ptr<const fleet::LeaseMarks> marks = agent.lease_marks ? agent.lease_marks() : nullptr;
    json result;
    if (marks != nullptr && !marks->empty()) {
      fleet::FleetView marked = snapshot->fleet;
      fleet::ApplyLeaseMarks(*marks, &marked);
      result = fleet::StatusToJson(marked);
    } else {
      result = fleet::StatusToJson(snapshot->fleet);
    }
    if (window && history != nullptr) {
      for (json& g : result["gpus"]) {
        std::optional<double> mean = history->Mean(g["index"].get<int>(), snapshot->taken_at_steady, *window);
        if (mean) g["utilization_gpu_recent_ratio"] = *mean;
      }
    }
    result["sequence"] = snapshot->sequence;
    result["tick_duration_seconds"] = static_cast<double>(snapshot->tick_duration.count()) / 1e6;
    return EncodeResult(request.id, result);
  }
  return EncodeError(request.id, kErrorUnknownMethod,
                     fmt::format("unknown method \"{}\" (known here: hello, status)", request.method));
}

Result<json> DecodeResponse(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok")) {
    return Status::Corruption("agent: malformed response");
  }
  if (j["ok"] == true && j.contains("result")) return j["result"];
  std::string code = j.value("/error/code"_json_pointer, std::string("unknown"));
  std::string message = j.value("/error/message"_json_pointer, std::string("(no message)"));
  if (code == kErrorBusy || code == kErrorUnavailable) return Status::Unavailable(fmt::format("agent: {}", message));
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
