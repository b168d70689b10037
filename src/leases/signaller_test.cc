// SPDX-License-Identifier: Apache-2.0
// The lease service's signals on their own: SIGTERM only once asked and
// sent, SIGKILL after the grace to what still runs, at once when a revoked
// lease's grace is over, and never to a PID another process now holds.
#include "leases/signaller.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "testutil/lease_service_fixture.h"

namespace tarmac::leases {
namespace {

using test::FakeProcesses;
using TimePoint = Signaller::TimePoint;
using std::chrono::seconds;

std::vector<std::string> Kinds(const std::vector<SignalEvent>& events) {
  std::vector<std::string> out;
  for (const SignalEvent& e : events) out.emplace_back(e.kind);
  return out;
}

TEST(SignallerTest, SigtermWhenSentThenSigkillAfterTheGraceToWhatStillRuns) {
  FakeProcesses procs;
  procs.Add(100, 1001, 7);
  procs.Add(101, 1001, 8);
  Signaller s(&procs);
  TimePoint t0{};
  s.Ask(5, 1001, {{100, 7}, {101, 8}}, "lease 5 ended", Actor{1001, "alice"});
  EXPECT_TRUE(procs.signals.empty());  // Asked, not sent: the change is not saved yet.
  std::vector<SignalEvent> sent = s.SendAsked(t0, seconds(10));
  EXPECT_EQ(procs.signals, (std::vector<std::pair<int64_t, int>>{{100, SIGTERM}, {101, SIGTERM}}));
  ASSERT_EQ(Kinds(sent), std::vector<std::string>{"sigterm"});
  EXPECT_EQ(sent[0].lease_id, 5);
  EXPECT_EQ(sent[0].actor.name, "alice");
  EXPECT_NE(sent[0].detail.find("pid 100,101"), std::string::npos) << sent[0].detail;
  EXPECT_TRUE(s.IsTerminating({100, 7}));
  procs.table.erase(101);  // Exits within the grace.
  EXPECT_TRUE(Kinds(s.Finish(t0 + seconds(5), seconds(10))).empty());
  std::vector<SignalEvent> killed = s.Finish(t0 + seconds(10), seconds(10));
  EXPECT_EQ(Kinds(killed), std::vector<std::string>{"sigkill"});
  EXPECT_EQ(procs.signals.back(), (std::pair<int64_t, int>{100, SIGKILL}));
  EXPECT_FALSE(s.IsTerminating({100, 7}));  // Done with.
  EXPECT_TRUE(s.Finish(t0 + seconds(20), seconds(10)).empty());
}

TEST(SignallerTest, KillNowSendsSigkillAtOnceAndWatchesNothing) {
  FakeProcesses procs;
  procs.Add(200, 1002, 3);
  Signaller s(&procs);
  s.Ask(9, 1002, {{200, 3}}, "backfill lease 9 revoked", Actor{});
  s.KillNow(8);  // Another lease's: changes nothing here.
  s.KillNow(9);
  EXPECT_EQ(Kinds(s.SendAsked(TimePoint{}, seconds(10))), std::vector<std::string>{"sigkill"});
  EXPECT_EQ(procs.signals, (std::vector<std::pair<int64_t, int>>{{200, SIGKILL}}));
  EXPECT_FALSE(s.IsTerminating({200, 3}));
}

TEST(SignallerTest, WhatAChangeThatWasNotSavedAskedIsNeverSent) {
  FakeProcesses procs;
  procs.Add(300, 1003, 1);
  procs.Add(301, 1003, 2);
  Signaller s(&procs);
  s.Ask(1, 1003, {{300, 1}}, "kept", Actor{});
  size_t before = s.asked();
  s.Ask(2, 1003, {{301, 2}}, "taken back", Actor{});
  s.TakeBack(before);
  EXPECT_EQ(s.asked(), 1u);
  s.SendAsked(TimePoint{}, seconds(10));
  EXPECT_EQ(procs.signals, (std::vector<std::pair<int64_t, int>>{{300, SIGTERM}}));
}

TEST(SignallerTest, APidAnotherProcessNowHoldsIsNeverSignalled) {
  FakeProcesses procs;
  procs.Add(400, 1004, 99);  // PID 400 was reused: the lease's had start time 5.
  Signaller s(&procs);
  s.Ask(3, 1004, {{400, 5}}, "lease 3 ended", Actor{});
  EXPECT_TRUE(s.SendAsked(TimePoint{}, seconds(10)).empty());
  s.Watch(3, 1004, {{400, 5}}, TimePoint{});
  EXPECT_TRUE(s.Finish(TimePoint{} + seconds(1), seconds(10)).empty());
  EXPECT_TRUE(procs.signals.empty());
}

TEST(SignallerTest, AFailedSignalIsSaidNotWatched) {
  FakeProcesses procs;
  procs.Add(500, 0, 4);  // Root's, asked as another owner's.
  Signaller s(&procs);
  s.Ask(4, 1005, {{500, 4}}, "lease 4 ended", Actor{});
  std::vector<SignalEvent> events = s.SendAsked(TimePoint{}, seconds(10));
  ASSERT_EQ(Kinds(events), std::vector<std::string>{"signal_failed"});
  EXPECT_NE(events[0].detail.find("SIGTERM"), std::string::npos) << events[0].detail;
  EXPECT_FALSE(s.IsTerminating({500, 4}));
}

}  // namespace
}  // namespace tarmac::leases
