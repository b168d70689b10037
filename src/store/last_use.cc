// SPDX-License-Identifier: Apache-2.0
#include "store/last_use.h"

#include <algorithm>

namespace tarmac::store {

Result<std::map<std::string, int64_t>> LastUseByGpu(Db* db, int64_t seen_since_unix) {
  Result<Stmt> stmt = db->Prepare(
      "SELECT g.uuid, g.first_seen, "
      "(SELECT MAX((r.minute + 1) * 60) FROM gpu_rollup_1m r "
      " WHERE r.gpu_id = g.gpu_id AND r.utilization_max_permille > 0), "
      "(SELECT MAX(s.last_seen) FROM process_sessions s WHERE s.gpu_id = g.gpu_id) "
      "FROM gpus g WHERE g.last_seen >= ?");
  if (!stmt.ok()) return stmt.status();
  stmt.value().Bind(1, seen_since_unix);
  std::map<std::string, int64_t> out;
  Status s = stmt.value().ForEachRow([&](const Stmt& r) {
    int64_t last = r.Int(1);
    if (!r.IsNull(2)) last = std::max(last, r.Int(2));
    if (!r.IsNull(3)) last = std::max(last, r.Int(3));
    out[r.Text(0)] = last;
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace tarmac::store
