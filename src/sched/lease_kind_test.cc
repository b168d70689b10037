// SPDX-License-Identifier: Apache-2.0
// The one vocabulary of lease kinds, through the lease JSON the API shows
// and the agent saves.
#include "node/lease_kind.h"

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
  l.kind = pod                  ? node::LeaseKind::kPod
           : !slurm_job.empty() ? node::LeaseKind::kSlurm
           : reservation        ? node::LeaseKind::kReservation
                                : node::LeaseKind::kRun;
  l.priority = priority;
  l.slurm_job = std::move(slurm_job);
  return l;
}

TEST(LeaseKindTest, EveryKindHasOneNameBothWays) {
  for (node::LeaseKind k : {node::LeaseKind::kRun, node::LeaseKind::kReservation, node::LeaseKind::kBackfill,
                            node::LeaseKind::kPod, node::LeaseKind::kSlurm}) {
    EXPECT_EQ(node::ParseLeaseKind(node::LeaseKindName(k)), k) << node::LeaseKindName(k);
    EXPECT_NE(node::LeaseKindNames().find(node::LeaseKindName(k)), std::string::npos);
  }
  EXPECT_FALSE(node::ParseLeaseKind("normal").has_value());
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
    EXPECT_EQ(back.value().kind, c.lease.kind) << c.kind;
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
  EXPECT_EQ(back.value().kind, node::LeaseKind::kReservation);
  EXPECT_EQ(KindOf(back.value()), node::LeaseKind::kBackfill);
  j["kind"] = "normal";
  Result<Lease> bad = LeaseFromJson(j, base);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("lease.kind: expected one of run, reservation"), std::string::npos)
      << bad.status().message();
}

// A MIG instance's lease is told by the profile it names, which the saved
// state keeps; a saved instance lease without one (or a whole GPU's with
// one) is refused, never taken for the other.
TEST(LeaseKindTest, AMigLeaseIsToldByItsProfileAndKeepsIt) {
  TimeBase base = Base();
  Lease mig = Of(false, Priority::kNormal);
  mig.gpus = {0};
  mig.uuids = {"MIG-0-1"};
  mig.mig_profile = "1g.10gb";
  EXPECT_TRUE(IsMigLease(mig));
  Result<Lease> back = LeaseFromJson(LeaseToJson(mig, base), base);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(IsMigLease(back.value()));
  EXPECT_EQ(back.value().mig_profile, "1g.10gb");
  json no_profile = LeaseToJson(mig, base);
  no_profile["mig_profile"] = "";
  EXPECT_FALSE(LeaseFromJson(no_profile, base).ok());
  Lease whole = Of(false, Priority::kNormal);
  whole.gpus = {0};
  whole.uuids = {"GPU-0"};
  EXPECT_FALSE(IsMigLease(whole));
  json with_profile = LeaseToJson(whole, base);
  with_profile["mig_profile"] = "1g.10gb";
  EXPECT_FALSE(LeaseFromJson(with_profile, base).ok());
}

}  // namespace
}  // namespace tarmac::sched
