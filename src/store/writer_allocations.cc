// SPDX-License-Identifier: Apache-2.0
//
// The history writer's record of whom another scheduler gave each GPU to
// (writer.h, table `allocations` in schema.cc): one row per stretch of one
// allocation, extended each tick it is seen, a new one after a gap.
#include <fmt/format.h>

#include "store/writer.h"

namespace tarmac::store {

Status StoreWriter::LoadOpenAllocations() {
  Result<Stmt*> allocations = db_->Cached(
      "SELECT allocation_id, gpu_id, kind, scope, name, detail FROM allocations WHERE last_seen >= ?");
  if (!allocations.ok()) return allocations.status();
  return allocations.value()->Bind(1, last_t_ - 180).ForEachRow([this](const Stmt& r) {
    allocations_[AllocationKey{r.Int(1), r.Text(2), r.Text(3), r.Text(4), r.Text(5)}] = r.Int(0);
  });
}

Status StoreWriter::NoteAllocation(const AllocationKey& key, int64_t t,
                                   std::map<AllocationKey, int64_t>* seen) {
  if (auto it = allocations_.find(key); it != allocations_.end()) {
    Result<Stmt*> update =
        db_->Cached("UPDATE allocations SET last_seen = MAX(last_seen, ?) WHERE allocation_id = ?");
    if (!update.ok()) return update.status();
    (*seen)[key] = it->second;
    return update.value()->Bind(1, t).Bind(2, it->second).Run();
  }
  Result<Stmt*> insert = db_->Cached(
      "INSERT INTO allocations (gpu_id, kind, scope, name, detail, first_seen, last_seen) VALUES (?, ?, ?, "
      "?, ?, ?, ?)");
  if (!insert.ok()) return insert.status();
  const auto& [gpu_id, kind, scope, name, detail] = key;
  Status s = insert.value()
                 ->Bind(1, gpu_id)
                 .Bind(2, kind)
                 .Bind(3, scope)
                 .Bind(4, name)
                 .Bind(5, detail)
                 .Bind(6, t)
                 .Bind(7, t)
                 .Run();
  if (!s.ok()) return s;
  (*seen)[key] = db_->last_insert_rowid();
  return kind == "pod"
             ? WriteEvent(t, gpu_id, "pod_allocated", fmt::format("{}/{} container {}", scope, name, detail))
             : WriteEvent(t, gpu_id, "slurm_job_allocated", fmt::format("job {} of {}", name, scope));
}

}  // namespace tarmac::store
