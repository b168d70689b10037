// SPDX-License-Identifier: Apache-2.0
#include "leases/lease_journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "common/fs.h"
#include "common/proc_files.h"
#include "testutil/testutil.h"

namespace tarmac::leases {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

class LeaseJournalTest : public ::testing::Test {
 protected:
  std::unique_ptr<store::LeaseState> Open() {
    Result<std::unique_ptr<store::LeaseState>> state = store::LeaseState::Open(path_);
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? std::move(state).value() : nullptr;
  }
  sched::Lease Lease(int64_t id) {
    sched::Lease l;
    l.id = id;
    l.uid = 1001;
    l.user = "alice";
    l.gpus = {0};
    l.granted_at = base_.steady;
    return l;
  }
  size_t Saved(const char* kind) {
    Result<std::vector<std::pair<int64_t, json>>> rows = Open()->Load(kind);
    return rows.ok() ? rows.value().size() : 999;
  }

  testing::TempDir dir_;
  std::string path_ = dir_.path() + "/leases.db";
  sched::TimeBase base_{SteadyClock::now(), std::chrono::system_clock::now()};
  Logger logger_{LogLevel::kOff};
};

TEST_F(LeaseJournalTest, WhatIsTakenBackIsNeverCommitted) {
  LeaseJournal journal(Open(), &logger_);
  journal.SaveLease(Lease(1), base_);
  LeaseJournal::Mark mark = journal.mark();
  journal.SaveLease(Lease(2), base_);
  journal.Record(store::LeaseEvent{});
  journal.TakeBack(mark);
  EXPECT_FALSE(journal.has_events());
  ASSERT_TRUE(journal.Commit(3, base_.steady).ok());
  EXPECT_EQ(Saved("lease"), 1u);
  EXPECT_EQ(journal.unsaved_changes(), 0u);
}

// A state file replaced under the agent is not the agent's to write: the
// changes are kept, the problem names it, until the file is back.
TEST_F(LeaseJournalTest, AReplacedStateFileKeepsTheChangesAndSaysWhyUntilItIsBack) {
  LeaseJournal journal(Open(), &logger_);
  sched::LeaseBook book;
  ASSERT_EQ(rename(path_.c_str(), (path_ + ".ours").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path_, "not a lease state").ok());  // Another file takes its place.
  journal.SaveLease(Lease(1), base_);
  EXPECT_FALSE(journal.CheckFile(book, base_, base_.steady).has_value());
  EXPECT_TRUE(journal.is_file_lost());
  EXPECT_FALSE(journal.Commit(book.next_id(), base_.steady).ok());
  EXPECT_NE(journal.problem().find(path_), std::string::npos) << journal.problem();
  EXPECT_FALSE(journal.StateJson()["ok"].get<bool>());
  EXPECT_EQ(journal.unsaved_changes(), 1u);
  std::string other;
  ASSERT_TRUE(ReadSmallFile(path_, &other));
  EXPECT_EQ(other, "not a lease state");  // Nothing written to the other file.
  ASSERT_EQ(rename((path_ + ".ours").c_str(), path_.c_str()), 0);
  EXPECT_FALSE(journal.CheckFile(book, base_, base_.steady).has_value());
  EXPECT_FALSE(journal.is_file_lost());
  Status committed = journal.Commit(book.next_id(), base_.steady);
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  EXPECT_EQ(journal.problem(), "");
  EXPECT_EQ(Saved("lease"), 1u);
}

TEST_F(LeaseJournalTest, ADeletedStateFileIsWrittenAnewFromTheBook) {
  LeaseJournal journal(Open(), &logger_);
  sched::LeaseBook book;
  ASSERT_EQ(unlink(path_.c_str()), 0);
  std::optional<std::string> why = journal.CheckFile(book, base_, base_.steady);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("written anew"), std::string::npos) << *why;
  EXPECT_FALSE(journal.is_file_lost());
  ASSERT_TRUE(journal.Commit(book.next_id(), base_.steady).ok());
  EXPECT_EQ(Saved("meta"), 1u);
}

TEST_F(LeaseJournalTest, WithoutAStateFileEveryCommitWorks) {
  LeaseJournal journal(nullptr, &logger_);
  EXPECT_FALSE(journal.keeps_state());
  journal.SaveLease(Lease(1), base_);
  EXPECT_TRUE(journal.Commit(2, base_.steady).ok());
  EXPECT_EQ(journal.unsaved_changes(), 0u);
  EXPECT_TRUE(journal.StateJson()["path"].is_null());
}

}  // namespace
}  // namespace tarmac::leases
