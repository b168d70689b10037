// SPDX-License-Identifier: Apache-2.0
//
// What happened to the GPUs, out of the store's `events` table
// (docs/store.md): Xids, throttling starts and ends, a GPU lost or back,
// backfill preemptions, pods and Slurm jobs allocated, and the events of
// the whole machine (the driver, the agent). The console marks them on a
// GPU's time axis (/api/v1/history).
//
// Thread safety: one thread per Db.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/sqlite_db.h"

namespace tarmac::store {

struct EventRequest {
  // Index ("3") or UUID: that GPU's events and the machine's; empty: all.
  std::optional<std::string> gpu;
  int64_t since_t = 0;  // Unix seconds, inclusive.
  int64_t until_t = 0;  // Exclusive.
  size_t limit = 1000;  // The newest this many, returned oldest first.
};

struct StoredEvent {
  int64_t t = 0;
  std::optional<int> gpu_index;  // None: the machine's.
  std::string uuid;
  std::string kind;  // "xid", "throttle_start", "gpu_lost", ...
  std::string detail;
};

// Process starts and ends are left out (a GPU's history has thousands).
Result<std::vector<StoredEvent>> QueryEvents(Db* db, const EventRequest& request);

// An "xid" event's detail, as the writer records it and QueryXidsSince
// reads it back: "Xid 48 (2 since the agent started)"; and the code back
// (nullopt for another text).
std::string XidEventDetail(int64_t xid, int64_t count_since_start);
std::optional<int64_t> XidOfEventDetail(const std::string& detail);

// The Xids recorded since `since_t` (events of kind "xid"), by GPU UUID
// and Xid code: what an agent that restarts carries on judging its GPUs
// by (node::GpuView::earlier_xid_count_by_code).
// A GPU in `not_before` counts only its Xids after that second (one in
// the same second as the clearing is taken as cleared: times are whole
// seconds).
Result<std::map<std::string, std::map<int64_t, int64_t>>> QueryXidsSince(
    Db* db, int64_t since_t, const std::map<std::string, int64_t>& not_before = {});

// {"t", "gpu", "uuid", "kind", "detail"}; gpu and uuid null for the
// machine's.
nlohmann::json StoredEventToJson(const StoredEvent& e);

}  // namespace tarmac::store
