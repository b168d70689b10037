// SPDX-License-Identifier: Apache-2.0
#include "client/lease_answer.h"

#include "nvidia/vendor_facts.h"

namespace tarmac::client {

using nlohmann::json;

Result<LeaseAnswer> LeaseAnswerFromJson(const json& answer, int64_t id) {
  LeaseAnswer a;
  a.id = id;
  std::string state = answer.is_object() ? answer.value("state", std::string()) : std::string();
  auto id_of = [](const json& j) -> int64_t {
    auto it = j.find("id");
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  };
  if (state == "granted" && answer.contains("lease") && answer["lease"].is_object()) {
    a.state = LeaseAnswer::State::kGranted;
    a.lease = answer["lease"];
    a.id = id_of(a.lease);
  } else if (state == "queued" && answer.contains("request") && answer["request"].is_object()) {
    a.state = LeaseAnswer::State::kQueued;
    a.request = answer["request"];
    a.id = id_of(a.request);
    const json& p = a.request.contains("position") ? a.request["position"] : json();
    a.position = p.is_number_integer() ? p.get<int64_t>() : 0;
    const json& r = a.request.contains("reason") ? a.request["reason"] : json();
    a.reason = r.is_string() ? r.get<std::string>() : std::string();
  } else if (state == "ended") {
    a.state = LeaseAnswer::State::kEnded;
    const json& r = answer.contains("reason") ? answer["reason"] : json();
    a.reason = r.is_string() ? r.get<std::string>() : std::string();
  } else {
    return Status::Corruption("agent: a lease answer without state granted, queued or ended", answer.dump());
  }
  return a;
}

std::string UuidList(const json& lease) {
  std::string out;
  if (!lease.is_object() || !lease.contains("uuids") || !lease["uuids"].is_array()) return out;
  for (const json& u : lease["uuids"]) {
    if (u.is_string()) out += (out.empty() ? "" : ",") + u.get<std::string>();
  }
  return out;
}

std::string GpuNames(const json& lease) {
  std::string indices;
  if (lease.is_object() && lease.contains("gpus") && lease["gpus"].is_array()) {
    for (const json& g : lease["gpus"]) {
      if (g.is_number_integer()) indices += (indices.empty() ? "" : ",") + std::to_string(g.get<int64_t>());
    }
  }
  std::string uuids = UuidList(lease);
  if (indices.empty()) return "GPU " + uuids;
  std::string out = (indices.find(',') == std::string::npos ? "GPU " : "GPUs ") + indices;
  if (nvidia::IsMigUuid(uuids)) out += " " + uuids;
  return out;
}

std::vector<std::pair<std::string, std::string>> LeaseEnvironment(const json& lease) {
  std::string uuids = UuidList(lease);
  int64_t id = lease.is_object() ? lease.value("id", int64_t{0}) : 0;
  std::string token = lease.is_object() ? lease.value("token", std::string()) : std::string();
  std::vector<std::pair<std::string, std::string>> env = {
      {std::string(nvidia::kVisibleDevicesVariable), uuids},
      {std::string(nvidia::kContainerVisibleDevicesVariable), uuids},
      {"TARMAC_LEASE_ID", std::to_string(id)},
      {"TARMAC_LEASE_TOKEN", token}};
  // A loan: how much of the GPU's memory it may take.
  int64_t lent = lease.is_object() ? lease.value("lent_memory_bytes", int64_t{0}) : 0;
  if (lent > 0) env.emplace_back("TARMAC_LENT_MEMORY_BYTES", std::to_string(lent));
  return env;
}

}  // namespace tarmac::client
