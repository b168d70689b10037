// SPDX-License-Identifier: Apache-2.0
#include "store/tick_record.h"

#include <gtest/gtest.h>

#include "store/codec.h"

namespace tarmac::store {
namespace {

TickRecord Tick() {
  TickRecord tick;
  tick.t = 1800000000;
  GpuTick g;
  g.gpu_id = 3;
  g.values[kUtilizationPercent] = 0;
  g.values[kBackfill] = 0;
  tick.gpus.push_back(g);
  tick.charges = {ChargeTick{3, 1, node::ChargeHolder::kLease, node::ChargeState::kIdle, 1000},
                  ChargeTick{3, 2, node::ChargeHolder::kProcess, node::ChargeState::kUnknown, 333}};
  return tick;
}

TEST(TickRecordTest, ChargesSurviveTheJournal) {
  Result<TickRecord> back = DecodeTick(1800000000, EncodeTick(Tick()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value().charges, Tick().charges);
  EXPECT_EQ(back.value().gpus.size(), 1u);
}

// A row of the format before charges (backfill marker, GPUs, processes)
// still decodes, with no charges; a charge with a code or share out of
// range is corruption, not a charge.
TEST(TickRecordTest, RowsBeforeChargesDecodeAndBadChargesAreRefused) {
  std::string before;
  PutVarint(100000 + 2, &before);  // The backfill format's marker.
  PutVarint(0, &before);           // No GPUs.
  PutVarint(0, &before);           // No processes.
  Result<TickRecord> old = DecodeTick(1, before);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(old.value().charges.empty());

  for (auto [code, share] : {std::pair<uint64_t, uint64_t>{6, 10}, {0, 1001}}) {
    std::string bad;
    PutVarint(100000 + 3, &bad);  // With charges.
    PutVarint(0, &bad);
    PutVarint(0, &bad);
    PutVarint(1, &bad);
    for (uint64_t v : {uint64_t{1}, uint64_t{1}, code, share}) PutVarint(v, &bad);
    Result<TickRecord> refused = DecodeTick(1, bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("bad charge"), std::string::npos);
  }
}

}  // namespace
}  // namespace tarmac::store
