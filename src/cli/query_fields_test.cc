// SPDX-License-Identifier: Apache-2.0
#include "cli/query_fields.h"

#include <gtest/gtest.h>

#include <set>

#include "node/sample_fields.h"

namespace tarmac::cli {
namespace {

node::NodeView OneGpu(const node::GpuSample& sample) {
  node::NodeView node_view;
  node::GpuView g;
  g.info.index = 0;
  g.sample = sample;
  node_view.gpus.push_back(g);
  return node_view;
}

std::string Query(const node::GpuSample& sample, std::string_view fields) {
  Result<std::vector<const GpuField*>> resolved = ResolveGpuFields(fields);
  EXPECT_TRUE(resolved.ok()) << fields;
  if (!resolved.ok()) return "";
  return RenderGpuQuery(OneGpu(sample), resolved.value(), CsvFormat{.has_header = false, .has_units = true});
}

// Every reading of the table that nvidia-smi has answers under each of its
// names: [N/A] while unread, a value once read.
TEST(QueryFieldsTest, EveryTableReadingIsAQueryFieldUnderEachName) {
  int with_smi = 0;
  for (const node::SampleField& reading : node::SampleFields()) {
    if (reading.smi.names[0].empty()) continue;
    ++with_smi;
    EXPECT_FALSE(reading.smi.help.empty()) << reading.json_key;
    node::GpuSample read;
    std::visit([&](auto member) { (read.*member).emplace(); }, reading.member);
    for (std::string_view name : reading.smi.names) {
      if (name.empty()) continue;
      EXPECT_EQ(Query(node::GpuSample{}, name), "[N/A]\n") << name;
      std::string value = Query(read, name);
      EXPECT_NE(value, "[N/A]\n") << name;
      EXPECT_FALSE(value.empty()) << name;
    }
  }
  EXPECT_GE(with_smi, 18);
}

TEST(QueryFieldsTest, TableReadingsAreWrittenAsNvidiaSmiWritesThem) {
  node::GpuSample s;
  s.utilization_gpu_ratio = 0.91;
  s.memory_used_bytes = int64_t{20} << 30;
  s.power_milliwatts = 612340;
  s.power_limit_milliwatts = 700000;
  s.sm_clock_hertz = 1980000000;
  s.performance_state = 0;
  s.clock_event_reasons = 0x4;
  s.temperature_celsius = 45.4;
  s.fan_speed_ratio = 0.3;
  s.pcie_width = 8;
  EXPECT_EQ(Query(s,
                  "utilization.gpu,memory.used,power.draw,power.limit,clocks.gr,pstate,"
                  "clocks_throttle_reasons.active,temperature.gpu,fan.speed,pcie.link.width.current"),
            "91 %, 20480 MiB, 612.34 W, 700.00 W, 1980 MHz, P0, 0x0000000000000004, 45, 30 %, 8\n");
  Result<std::vector<const GpuField*>> fields = ResolveGpuFields("utilization.gpu,temperature.gpu,clocks.sm");
  ASSERT_TRUE(fields.ok());
  EXPECT_EQ(RenderGpuQuery(OneGpu(s), fields.value(), CsvFormat{}),
            "utilization.gpu [%], temperature.gpu, clocks.current.sm [MHz]\n91 %, 45, 1980 MHz\n");
}

TEST(QueryFieldsTest, NoNameIsTwoFieldsAndEveryFieldIsDescribed) {
  std::set<std::string> names;
  for (const GpuField& f : GpuFields()) {
    for (const std::string& name : f.names)
      EXPECT_TRUE(names.insert(name).second || name == f.names[0]) << name;
    EXPECT_NE(DescribeGpuFields().find('"' + f.names[0]), std::string::npos) << f.names[0];
  }
}

}  // namespace
}  // namespace tarmac::cli
