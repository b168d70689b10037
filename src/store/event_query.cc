// SPDX-License-Identifier: Apache-2.0
#include "store/event_query.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace tarmac::store {

Result<std::vector<StoredEvent>> QueryEvents(Db* db, const EventRequest& request) {
  // A GPU named by index is the one last seen there, as QueryHistory reads
  // it; MIG instances share their parent's index and are left out here.
  Result<Stmt> stmt = db->Prepare(
      "SELECT e.t, g.gpu_index, g.uuid, e.kind, e.detail FROM events e LEFT JOIN gpus g USING (gpu_id) "
      "WHERE e.t >= ?1 AND e.t < ?2 AND e.kind NOT IN ('process_start', 'process_end') "
      "AND (?3 IS NULL OR e.gpu_id IS NULL OR g.uuid = ?3 OR (g.uuid NOT LIKE 'MIG-%' AND CAST(g.gpu_index "
      "AS TEXT) = ?3)) "
      "ORDER BY e.t DESC, e.event_id DESC LIMIT ?4");
  if (!stmt.ok()) return stmt.status();
  Stmt& s = stmt.value();
  s.Bind(1, request.since_t).Bind(2, request.until_t).Bind(4, static_cast<int64_t>(request.limit));
  if (request.gpu) {
    s.Bind(3, std::string_view(*request.gpu));
  } else {
    s.BindNull(3);
  }
  std::vector<StoredEvent> out;
  Status st = s.ForEachRow([&](const Stmt& row) {
    StoredEvent e;
    e.t = row.Int(0);
    if (!row.IsNull(1)) {
      e.gpu_index = static_cast<int>(row.Int(1));
      e.uuid = row.Text(2);
    }
    e.kind = row.Text(3);
    e.detail = row.Text(4);
    out.push_back(std::move(e));
  });
  if (!st.ok()) return st;
  std::reverse(out.begin(), out.end());
  return out;
}

std::string XidEventDetail(int64_t xid, int64_t count_since_start) {
  return fmt::format("Xid {} ({} since the agent started)", xid, count_since_start);
}

std::optional<int64_t> XidOfEventDetail(const std::string& detail) {
  long long xid = 0;
  if (std::sscanf(detail.c_str(), "Xid %lld (", &xid) != 1) return std::nullopt;
  return static_cast<int64_t>(xid);
}

Result<std::map<std::string, std::map<int64_t, int64_t>>> QueryXidsSince(
    Db* db, int64_t since_t, const std::map<std::string, int64_t>& not_before) {
  Result<Stmt> stmt = db->Prepare(
      "SELECT g.uuid, e.detail, e.t FROM events e JOIN gpus g USING (gpu_id) WHERE e.kind = 'xid' AND e.t >= "
      "?1");
  if (!stmt.ok()) return stmt.status();
  stmt.value().Bind(1, since_t);
  std::map<std::string, std::map<int64_t, int64_t>> out;
  Status st = stmt.value().ForEachRow([&](const Stmt& row) {
    if (auto cut = not_before.find(row.Text(0)); cut != not_before.end() && row.Int(2) <= cut->second) return;
    if (std::optional<int64_t> xid = XidOfEventDetail(row.Text(1))) out[row.Text(0)][*xid]++;
  });
  if (!st.ok()) return st;
  return out;
}

nlohmann::json StoredEventToJson(const StoredEvent& e) {
  nlohmann::json j = {
      {"t", e.t}, {"gpu", nullptr}, {"uuid", nullptr}, {"kind", e.kind}, {"detail", e.detail}};
  if (e.gpu_index) {
    j["gpu"] = *e.gpu_index;
    j["uuid"] = e.uuid;
  }
  return j;
}

}  // namespace tarmac::store
