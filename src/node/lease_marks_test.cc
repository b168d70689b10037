// SPDX-License-Identifier: Apache-2.0
#include "node/lease_marks.h"

#include <gtest/gtest.h>

#include "node/node_json.h"

namespace tarmac::node {
namespace {

NodeView TwoGpusOneInMig() {
  NodeView f;
  for (int i = 0; i < 2; ++i) {
    GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    f.gpus.push_back(g);
  }
  MigInstance m;
  m.uuid = "MIG-1-1";
  f.gpus[1].sample.mig_instances.push_back(m);
  f.gpus[1].sample.has_mig_instances = true;
  return f;
}

TEST(LeaseMarksTest, MarksWhatIsHeldAndClearsWhatIsNot) {
  NodeView f = TwoGpusOneInMig();
  f.gpus[1].lease = GpuLease{9, "stale", LeaseKind::kRun, false};  // Held once, not now.
  LeaseMarks marks;
  marks.leases[0] = GpuLease{3, "alice", LeaseKind::kBackfill, true};
  marks.mig_leases["MIG-1-1"] = GpuLease{4, "bob", LeaseKind::kSlurm, false, "42"};
  marks.mig_leases["MIG-7-7"] = GpuLease{5, "nobody", LeaseKind::kRun, false};  // No such instance here.
  marks.preemptions[0] = 2;
  ApplyLeaseMarks(marks, &f);
  ASSERT_TRUE(f.gpus[0].lease.has_value());
  EXPECT_EQ(f.gpus[0].lease->id, 3);
  EXPECT_TRUE(f.gpus[0].lease->is_revoking);
  EXPECT_EQ(f.gpus[0].backfill_preemptions, 2);
  EXPECT_FALSE(f.gpus[1].lease.has_value());
  ASSERT_EQ(f.gpus[1].mig_leases.size(), 1u);
  EXPECT_EQ(f.gpus[1].mig_leases.at("MIG-1-1").id, 4);
  EXPECT_EQ(f.gpus[1].backfill_preemptions, 0);
  // What status JSON then says of them.
  nlohmann::json j = StatusToJson(f);
  EXPECT_EQ(j["gpus"][0]["lease"]["id"], 3);
  EXPECT_EQ(j["gpus"][0]["lease"]["kind"], "backfill");
  EXPECT_EQ(j["gpus"][1]["mig_instances"][0]["lease"]["kind"], "slurm");
}

}  // namespace
}  // namespace tarmac::node
