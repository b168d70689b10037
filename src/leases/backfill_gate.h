// SPDX-License-Identifier: Apache-2.0
//
// Which GPUs accept backfill now. A GPU is in use by other work when a
// lease other than a backfill lease holds it, when it runs compute
// processes outside any lease, or when its SM is busy and no backfill lease
// holds it; backfill's own use does not count. Idle time is counted from
// its last use by other work (in the history when the agent was seeded with
// it, SeedLastUse, else from the agent's first look at it, so a fresh agent
// waits too). Whatever the mode, a GPU takes backfill only inside one of
// `windows` (when any) and under the temperature and power limits (when set).
//
// With idle_for = "auto" (BackfillPolicy::is_auto) a GPU accepts backfill
// once it has been idle for `settle` (so a user's next job after a finished
// one preempts nothing), no request of another priority waits for it
// (GateContext::wanted_gpus: backfill there would only be revoked again),
// and a real arrival on it within `min_run` is less likely than
// not at the rate the arrival model (arrival_model.h) learned for this GPU
// and hour of the week. With idle_for = a duration, once it has been idle
// that long, whatever waits.
//
// A MIG instance is judged the same way as a device of its own: held by
// its lease, its processes, its engine activity; its GPU's limits and
// arrivals.
//
// Thread safety: none; the lease service calls it under its lock.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "leases/arrival_model.h"
#include "leases/lease_config.h"
#include "leases/lease_policy.h"
#include "node/node_view.h"

namespace tarmac::leases {

// How each GPU of the node is held (indexed like node_view.gpus).
enum class Holder { kNone, kBackfill, kOther };

// Why a device accepts backfill now or not yet: the facts each tick notes
// (no text: the tick runs every sample); BackfillGate::Describe puts them
// in words when asked ("idle 3m 00s of idle_for 10m 00s").
enum class GateReason {
  kAccepts,
  kInUse,
  kTooHot,
  kTooMuchPower,
  kNotIdleLongEnough,  // idle_for, or "auto"'s settle.
  kRequestWaits,       // "auto": a request of another priority could use it.
  kArrivalLikely,      // "auto": a real arrival within min_run is likely.
  kOutsideWindows
};
struct GateVerdict {
  bool accepts = false;
  GateReason reason = GateReason::kAccepts;
  const char* used_by = "";  // kInUse: what other work uses it (static text).
  std::chrono::milliseconds idle{0};
  double temperature_celsius = 0;
  double power_watts = 0;
  double arrivals_per_hour = 0;  // "auto": the learned rate at this hour of the week.
  double arrival_chance = 0;     // "auto": of an arrival within min_run (0-1).
  // When it would accept if nothing else changes (idle_for running out, a
  // window opening); empty when that depends on other work or a reading.
  std::optional<std::chrono::milliseconds> starts_in;
  // The same as a time (the clock's steady time): when starts_in runs out.
  std::optional<std::chrono::steady_clock::time_point> opens_at;
};

// What the gate sees at one tick besides the GPUs and their holders.
struct GateContext {
  int minute_of_day = 0;  // Local time, 0-1439.
  int hour_of_week = 0;   // Local, 0-167 (arrival_model.h).
  double now_unix = 0;
  // GPU indices and MIG UUIDs that a waiting request of another priority
  // is about to get: those the scheduler keeps for the head of the queue,
  // and instances of a waiting MIG request's profile.
  std::set<int> wanted_gpus;
  std::set<std::string> wanted_instances;
};

class BackfillGate {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `since_unix`: when the agent began watching (the arrival model's start).
  explicit BackfillGate(BackfillPolicy policy, double since_unix = 0);

  // A new policy (a config reload); what each GPU was last used for is kept,
  // so idle_for counts on from the same moments.
  void SetPolicy(BackfillPolicy policy);

  // Notes each GPU's use at `now`. Returns, per GPU, whether it accepts
  // backfill.
  std::vector<bool> Observe(const node::NodeView& node_view, const std::vector<Holder>& holders,
                            TimePoint now, const GateContext& context);
  // The same for every MIG instance of the node, by its MIG UUID;
  // `holders` by MIG UUID (an instance not there is held by none).
  std::map<std::string, bool> ObserveInstances(const node::NodeView& node_view,
                                               const std::map<std::string, Holder>& holders, TimePoint now,
                                               const GateContext& context);

  // When real requests arrive (what "auto" learns from): a lease of another
  // priority than backfill was granted GPU `gpu` at `at_unix`.
  void NoteArrival(int gpu, double at_unix) { arrivals_.Note(gpu, HourOfWeek(at_unix), at_unix); }
  const ArrivalModel& arrivals() const { return arrivals_; }

  // When other work last used each device, by UUID, from before this gate
  // existed (the history, across an agent restart); a device already
  // watched keeps what it saw.
  void SeedLastUse(const std::map<std::string, TimePoint>& last_used);
  // Other work used the device `uuid` (GPU or MIG instance) at `at`: a lease
  // of another priority was granted or ended, which a tick may not see when
  // the lease is shorter than a tick. Its idle time counts from then.
  void NoteUse(const std::string& uuid, TimePoint at);

  // The first time a verdict of the last Observe/ObserveInstances opens if
  // nothing else changes (GateVerdict::opens_at: a settle or idle_for
  // running out, a window opening); empty when none waits on time alone.
  std::optional<std::chrono::steady_clock::time_point> NextOpening() const;

  // The verdict of the last Observe/ObserveInstances, by GPU or MIG UUID.
  const std::map<std::string, GateVerdict>& verdicts() const { return verdicts_; }
  // A verdict in words, under this gate's policy: "in use: another lease
  // holds it", "idle 3m 00s of idle_for 10m 00s", "accepts backfill (idle
  // 12m 00s)"; with "auto": "starts now: nothing queued, arrivals at this
  // hour 0.2/h", "settling: idle 10s of settle 30s".
  std::string Describe(const GateVerdict& verdict) const;

 private:
  BackfillPolicy policy_;
  std::vector<TimeWindow> windows_;  // policy_.windows, parsed once.
  // Whether the device `uuid` (of `gpu`) accepts backfill, noting its use
  // by other work at `now` when `used_by` says what uses it (null: none).
  // `gpu_index` is the GPU's (for an instance, its parent's) and `is_wanted`
  // whether a waiting request of another priority could use the device.
  bool Accepts(const std::string& uuid, const char* used_by, const node::GpuSample& gpu, int gpu_index,
               bool is_wanted, TimePoint now, const GateContext& context);
  // Minutes from `minute_of_day` to the next window's start.
  int MinutesToWindow(int minute_of_day) const;

  std::map<std::string, TimePoint> last_used_;  // By GPU or MIG UUID: when other work last used it.
  std::map<std::string, GateVerdict> verdicts_;
  ArrivalModel arrivals_;
};

}  // namespace tarmac::leases
