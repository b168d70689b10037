// SPDX-License-Identifier: Apache-2.0
#include "store/lease_event_json.h"

#include <fmt/format.h>

#include "common/json_fields.h"

namespace tarmac::store {

using nlohmann::json;

json LeaseEventToJson(const LeaseEvent& e) {
  return {{"seq", e.seq},   {"at_unix", e.at_unix}, {"kind", e.kind},           {"lease", e.lease_id},
          {"uid", e.uid},   {"user", e.user},       {"actor_uid", e.actor_uid}, {"actor", e.actor},
          {"gpus", e.gpus}, {"detail", e.detail}};
}

Result<LeaseEvent> LeaseEventFromJson(const json& j) {
  LeaseEvent e;
  JsonFields f(j, "event");
  f.Get("seq", &e.seq);
  f.Get("at_unix", &e.at_unix);
  f.Get("kind", &e.kind);
  f.Optional("lease", &e.lease_id);
  f.Optional("uid", &e.uid);
  f.Optional("user", &e.user);
  f.Optional("actor_uid", &e.actor_uid);
  f.Optional("actor", &e.actor);
  f.Optional("gpus", &e.gpus);
  f.Optional("detail", &e.detail);
  if (!f.ok()) return Status::Corruption(f.status().message());
  return e;
}

Result<std::vector<LeaseEvent>> LeaseEventsFromJson(const json& answer) {
  return DecodeList<LeaseEvent>(answer, "events", LeaseEventFromJson);
}

}  // namespace tarmac::store
