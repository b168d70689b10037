// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>

#include "client/lease_answer.h"
#include "common/json_fields.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::client {

using nlohmann::json;

Result<LeaseAnswer> LeaseAnswerFromJson(const json& answer, int64_t id) {
  LeaseAnswer a;
  a.id = id;
  std::string state;
  JsonFields f(answer, "answer");
  f.Get("state", &state);
  if (!f.ok()) return Status::Corruption(f.status().message(), answer.dump());
  const sched::TimeBase base = sched::UnixTimeBase();
  if (state == "granted") {
    Result<sched::LeaseShown> lease = sched::LeaseShownFromJson(
        answer.is_object() && answer.contains("lease") ? answer["lease"] : json(), base);
    if (!lease.ok()) return Status::Corruption(fmt::format("agent: {}", lease.status().message()));
    a.state = LeaseAnswer::State::kGranted;
    a.lease = std::move(lease).value();
    a.id = a.lease.lease.id;
  } else if (state == "queued") {
    Result<sched::PendingShown> request = sched::PendingShownFromJson(
        answer.is_object() && answer.contains("request") ? answer["request"] : json(), base);
    if (!request.ok()) return Status::Corruption(fmt::format("agent: {}", request.status().message()));
    a.state = LeaseAnswer::State::kQueued;
    a.request = std::move(request).value();
    a.id = a.request.pending.id;
    a.position = a.request.position;
    a.reason = a.request.reason;
  } else if (state == "ended") {
    a.state = LeaseAnswer::State::kEnded;
    f.Optional("reason", &a.reason);
    if (!f.ok()) return Status::Corruption(f.status().message(), answer.dump());
  } else {
    return Status::Corruption("agent: a lease answer without state granted, queued or ended", answer.dump());
  }
  return a;
}

Result<ReleaseAnswer> ReleaseAnswerFromJson(const json& answer) {
  ReleaseAnswer r;
  JsonFields f(answer, "answer");
  std::string state;
  f.Optional("state", &state);
  f.Optional("reason", &r.reason);
  f.Optional("ended_by", &r.ended_by);
  if (!f.ok()) return Status::Corruption(f.status().message(), answer.dump());
  r.was_cancelled = f.has("cancelled");
  r.was_ended = state == "ended";
  if (!r.was_cancelled && !r.was_ended && !f.has("released"))
    return Status::Corruption("agent: a release answer that says neither released, cancelled nor ended");
  return r;
}

Result<std::vector<sched::LeaseShown>> LeasesFromJson(const json& answer) {
  Result<std::vector<sched::LeaseShown>> leases = DecodeList<sched::LeaseShown>(
      answer, "leases", [](const json& j) { return sched::LeaseShownFromJson(j, sched::UnixTimeBase()); });
  if (!leases.ok()) return Status::Corruption("agent: " + leases.status().message());
  return leases;
}

Result<std::vector<sched::PendingShown>> QueueFromJson(const json& answer) {
  Result<std::vector<sched::PendingShown>> queue = DecodeList<sched::PendingShown>(
      answer, "queue", [](const json& j) { return sched::PendingShownFromJson(j, sched::UnixTimeBase()); });
  if (!queue.ok()) return Status::Corruption("agent: " + queue.status().message());
  return queue;
}

std::string UuidList(const sched::Lease& lease) { return fmt::format("{}", fmt::join(lease.uuids, ",")); }

std::string GpuNames(const sched::Lease& lease) {
  std::string uuids = UuidList(lease);
  if (lease.gpus.empty()) return "GPU " + uuids;
  std::string out =
      (lease.gpus.size() == 1 ? "GPU " : "GPUs ") + fmt::format("{}", fmt::join(lease.gpus, ","));
  if (nvidia::IsMigUuid(uuids)) out += " " + uuids;
  return out;
}

std::vector<std::pair<std::string, std::string>> LeaseEnvironment(const sched::Lease& lease) {
  std::string uuids = UuidList(lease);
  std::vector<std::pair<std::string, std::string>> env = {
      {std::string(nvidia::kVisibleDevicesVariable), uuids},
      {std::string(nvidia::kContainerVisibleDevicesVariable), uuids},
      {"TARMAC_LEASE_ID", std::to_string(lease.id)},
      {"TARMAC_LEASE_TOKEN", lease.token}};
  // A loan: how much of the GPU's memory it may take.
  if (lease.lent_memory_bytes > 0)
    env.emplace_back("TARMAC_LENT_MEMORY_BYTES", std::to_string(lease.lent_memory_bytes));
  return env;
}

}  // namespace tarmac::client
