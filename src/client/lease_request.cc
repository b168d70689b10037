// SPDX-License-Identifier: Apache-2.0
#include "client/lease_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "common/random_id.h"
#include "common/split.h"
#include "common/units.h"
#include "nvidia/mig_profiles.h"
#include "nvidia/vendor_facts.h"

namespace tarmac::client {
namespace {

using nlohmann::json;

Result<int64_t> Seconds(const std::string& text, const char* option) {
  Result<std::chrono::milliseconds> d = ParseDurationWithUnit(text);
  if (!d.ok()) return d.status().WithContext(option);
  if (d.value().count() <= 0) return Status::InvalidArgument(fmt::format("{}: must be positive", option));
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d.value()).count());
}

}  // namespace

Result<json> LeaseParams(const LeaseAsk& ask, const std::string& kind, const std::string& command) {
  // One key per invocation: a request resent after a timeout is the same
  // request to the agent, never a second lease.
  json p = {{"kind", kind},
            {"priority", ask.priority},
            {"wait", !ask.no_wait},
            {"command", command},
            {"request_key", RandomHex128()}};
  if (!ask.mig_profile.empty() || !ask.mig_uuid.empty()) {
    if (!ask.uuids.empty() || ask.gpus != 1)
      return Status::InvalidArgument(
          "--mig: a MIG lease takes one instance; "
          "leave out --gpu and --gpus");
    if (!ask.mig_uuid.empty()) {
      if (!nvidia::IsMigUuid(ask.mig_uuid)) {
        return Status::InvalidArgument(
            fmt::format("--mig-uuid: expected a MIG UUID (MIG-...), got '{}'", ask.mig_uuid));
      }
      p["uuids"] = json::array({ask.mig_uuid});
    } else {
      if (!nvidia::IsMigProfileName(ask.mig_profile)) {
        return Status::InvalidArgument(fmt::format(
            "--mig: expected a MIG profile such as 1g.10gb or 3g.40gb, got '{}'", ask.mig_profile));
      }
      p["mig_profile"] = ask.mig_profile;
    }
  } else if (!ask.uuids.empty()) {
    json uuids = json::array();
    for (const std::string& one : SplitCommas(ask.uuids, Empties::kKeep)) {
      if (one.empty()) return Status::InvalidArgument("--gpu: expected UUIDs separated by commas");
      uuids.push_back(one);
    }
    p["uuids"] = uuids;
  } else {
    p["gpus"] = ask.gpus;
  }
  if (!ask.min_free_memory.empty()) {
    Result<int64_t> bytes = ParseBytes(ask.min_free_memory);
    if (!bytes.ok()) return bytes.status().WithContext("--min-free-memory");
    p["min_free_memory_bytes"] = bytes.value();
  }
  if (!ask.max_time.empty()) {
    Result<int64_t> s = Seconds(ask.max_time, kind == "reservation" ? "--for" : "--max-time");
    if (!s.ok()) return s.status();
    p["max_time_seconds"] = s.value();
  }
  if (!ask.idle_timeout.empty()) {
    Result<int64_t> s = Seconds(ask.idle_timeout, "--idle-timeout");
    if (!s.ok()) return s.status();
    p["idle_timeout_seconds"] = s.value();
  }
  if (ask.lend_idle) p["lend_idle"] = true;
  if (ask.allow_unhealthy) p["allow_unhealthy"] = true;
  return p;
}

}  // namespace tarmac::client
