// SPDX-License-Identifier: Apache-2.0
//
// Which GPUs accept backfill now. A GPU is in use by other work when a
// lease other than a backfill lease holds it, when it runs compute
// processes outside any lease, or when its SM is busy and no backfill lease
// holds it; backfill's own use does not count. A GPU accepts backfill once
// it has been out of such use for `idle_for` (counted from its last use
// in the history when the agent was seeded with it, SeedLastUse, else from
// the agent's first look at it, so a fresh agent waits too), inside one of `windows`
// (when any), and under the temperature and power limits (when set).
// A MIG instance is judged the same way as a device of its own: held by
// its lease, its processes, its engine activity; its GPU's limits.
//
// Thread safety: none; the lease service calls it under its lock.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"
#include "leases/lease_config.h"
#include "leases/lease_policy.h"

namespace tarmac::leases {

// How each GPU of the fleet is held (indexed like fleet.gpus).
enum class Holder { kNone, kBackfill, kOther };

// Why a device accepts backfill now or not yet: the facts each tick notes
// (no text: the tick runs every sample); BackfillGate::Describe puts them
// in words when asked ("idle 3m 00s of idle_for 10m 00s").
enum class GateReason { kAccepts, kInUse, kTooHot, kTooMuchPower, kNotIdleLongEnough, kOutsideWindows };
struct GateVerdict {
  bool accepts = false;
  GateReason reason = GateReason::kAccepts;
  const char* used_by = "";  // kInUse: what other work uses it (static text).
  std::chrono::milliseconds idle{0};
  double temperature_celsius = 0;
  double power_watts = 0;
  // When it would accept if nothing else changes (idle_for running out, a
  // window opening); empty when that depends on other work or a reading.
  std::optional<std::chrono::milliseconds> starts_in;
};

class BackfillGate {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit BackfillGate(BackfillPolicy policy);

  // A new policy (a config reload); what each GPU was last used for is kept,
  // so idle_for counts on from the same moments.
  void SetPolicy(BackfillPolicy policy);

  // Notes each GPU's use at `now`; `minute_of_day` is the local time of day
  // (0-1439). Returns, per GPU, whether it accepts backfill.
  std::vector<bool> Observe(const fleet::FleetView& fleet, const std::vector<Holder>& holders, TimePoint now,
                            int minute_of_day);
  // The same for every MIG instance of the fleet, by its MIG UUID;
  // `holders` by MIG UUID (an instance not there is held by none).
  std::map<std::string, bool> ObserveInstances(const fleet::FleetView& fleet,
                                               const std::map<std::string, Holder>& holders, TimePoint now,
                                               int minute_of_day);

  // When other work last used each device, by UUID, from before this gate
  // existed (the history, across an agent restart); a device already
  // watched keeps what it saw.
  void SeedLastUse(const std::map<std::string, TimePoint>& last_used);

  // The verdict of the last Observe/ObserveInstances, by GPU or MIG UUID.
  const std::map<std::string, GateVerdict>& verdicts() const { return verdicts_; }
  // A verdict in words, under this gate's policy: "in use: another lease
  // holds it", "idle 3m 00s of idle_for 10m 00s", "accepts backfill (idle
  // 12m 00s)".
  std::string Describe(const GateVerdict& verdict) const;

 private:
  BackfillPolicy policy_;
  std::vector<TimeWindow> windows_;  // policy_.windows, parsed once.
  // Whether the device `uuid` (of `gpu`) accepts backfill, noting its use
  // by other work at `now` when `used_by` says what uses it (null: none).
  bool Accepts(const std::string& uuid, const char* used_by, const fleet::GpuSample& gpu, TimePoint now,
               int minute_of_day);
  // Minutes from `minute_of_day` to the next window's start.
  int MinutesToWindow(int minute_of_day) const;

  std::map<std::string, TimePoint> last_used_;  // By GPU or MIG UUID: when other work last used it.
  std::map<std::string, GateVerdict> verdicts_;
};

}  // namespace tarmac::leases
