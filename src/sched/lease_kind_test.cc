// SPDX-License-Identifier: Apache-2.0
// The one vocabulary of lease kinds, through the lease JSON the API shows
// and the agent saves.
#include "fleet/lease_kind.h"

#include <gtest/gtest.h>

#include "sched/lease_book.h"
#include "sched/lease_json.h"

namespace tarmac::sched {
namespace {

using nlohmann::json;

TimeBase Base() { return {std::chrono::steady_clock::now(), std::chrono::system_clock::now()}; }

Lease Of(bool reservation, Priority priority, bool pod = false, std::string slurm_job = "") {
  Lease l;
  l.id = 3;
  l.uid = 1001;
  l.user = "alice";
  l.is_reservation = reservation;
  l.priority = priority;
  l.is_pod = pod;
  l.slurm_job = std::move(slurm_job);
  return l;
}

TEST(LeaseKindTest, EveryKindHasOneNameBothWays) {
  for (fleet::LeaseKind k : {fleet::LeaseKind::kRun, fleet::LeaseKind::kReservation,
                             fleet::LeaseKind::kBackfill, fleet::LeaseKind::kPod, fleet::LeaseKind::kSlurm}) {
    EXPECT_EQ(fleet::ParseLeaseKind(fleet::LeaseKindName(k)), k) << fleet::LeaseKindName(k);
    EXPECT_NE(fleet::LeaseKindNames().find(fleet::LeaseKindName(k)), std::string::npos);
  }
  EXPECT_FALSE(fleet::ParseLeaseKind("normal").has_value());
}

// A backfill reservation shows as backfill, and comes back from the saved
// state a reservation still (it outlives its client).
TEST(LeaseKindTest, KindsSurviveTheSavedStateAndABackfillReservationStaysOne) {
  TimeBase base = Base();
  struct Case {
    Lease lease;
    const char* kind;
  };
  for (const Case& c :
       {Case{Of(false, Priority::kNormal), "run"}, Case{Of(true, Priority::kHigh), "reservation"},
        Case{Of(true, Priority::kBackfill), "backfill"}, Case{Of(false, Priority::kBackfill), "backfill"},
        Case{Of(false, Priority::kNormal, true), "pod"},
        Case{Of(false, Priority::kNormal, false, "42"), "slurm"}}) {
    json j = LeaseToJson(c.lease, base);
    EXPECT_EQ(j["kind"], c.kind);
    Result<Lease> back = LeaseFromJson(j, base);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back.value().is_reservation, c.lease.is_reservation) << c.kind;
    EXPECT_EQ(KindOf(back.value()), KindOf(c.lease)) << c.kind;
  }
}

// What agents saved before the one vocabulary (a backfill lease as kind
// "run" with its priority) restores as what it was.
TEST(LeaseKindTest, AnOlderSavedBackfillLeaseRestores) {
  TimeBase base = Base();
  json j = LeaseToJson(Of(true, Priority::kBackfill), base);
  j["kind"] = "reservation";
  j.erase("reservation");
  Result<Lease> back = LeaseFromJson(j, base);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back.value().is_reservation);
  EXPECT_EQ(KindOf(back.value()), fleet::LeaseKind::kBackfill);
  j["kind"] = "normal";
  Result<Lease> bad = LeaseFromJson(j, base);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("lease.kind: expected one of run, reservation"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace tarmac::sched
