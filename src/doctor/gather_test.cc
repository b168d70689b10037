// SPDX-License-Identifier: Apache-2.0
// The doctor's inputs filled one way for `tarmac doctor` and the agent's
// scheduled run: the GPUs and who asks, the window's CPU time, the host.
#include "doctor/gather.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/proc_files.h"
#include "nvidia/clock_event_reasons.h"
#include "store/sqlite_db.h"
#include "store/writer.h"
#include "testutil/fake_clock.h"
#include "testutil/testutil.h"

namespace tarmac::doctor {
namespace {

constexpr const char* kStatBefore = "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n";
constexpr const char* kStatAfter = "cpu  200 0 100 900 0 0 0 0 0 0\ncpu0 200 0 100 900 0 0 0 0 0 0\n";

TEST(GatherTest, FillInputsTakesTheGpusWhoAsksTheWindowAndTheHost) {
  testing::TempDir dir;
  dir.Write("proc/meminfo", "MemTotal:       1024000 kB\nMemAvailable:    512000 kB\n");
  HostFiles host(dir.path());
  InputSources sources;
  sources.node_view.hostname = "gpu-7";
  sources.node_view.gpus.resize(2);
  sources.through_agent = true;
  sources.stat_before = kStatBefore;
  sources.stat_after = kStatAfter;
  DoctorInputs in;
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.hostname, "gpu-7");
  EXPECT_EQ(in.node_view.gpus.size(), 2u);
  EXPECT_TRUE(in.through_agent);
  EXPECT_EQ(in.is_root, ::geteuid() == 0);
  EXPECT_TRUE(in.gpu_error.empty());
  ASSERT_TRUE(in.cpu.has_value());
  EXPECT_NEAR(in.cpu->busy_ratio, 0.5, 1e-9);
  EXPECT_TRUE(in.memory.has_value());  // GatherHost read the planted host.
}

// A GPU process's CPU time over the window, in CPUs: its ticks between the
// two readings of its /proc/<pid>/stat over the window's ticks per CPU; a
// PID that another process took in between is not judged.
TEST(GatherTest, AGpuProcesssCpuTimeOverTheWindowIsInCpus) {
  testing::TempDir dir;
  HostFiles host(dir.path());
  InputSources sources;
  sources.node_view.gpus.resize(1);
  for (int64_t pid : {42, 43}) {
    node::ProcessView p;
    p.process.pid = pid;
    sources.node_view.gpus[0].processes.push_back(p);
  }
  sources.stat_before = kStatBefore;  // 200 ticks pass on the one CPU.
  sources.stat_after = kStatAfter;
  auto stat = [](int64_t utime, int64_t start) {
    return fmt::format("42 (python) R 1 42 42 0 -1 0 0 0 0 0 {} 10 0 0 20 0 1 0 {} 0 0\n", utime, start);
  };
  sources.process_stats_before = {{42, stat(1000, 5000)}, {43, stat(1000, 5000)}};
  sources.process_stats_after = {{42, stat(1090, 5000)}, {43, stat(1090, 7000)}};
  DoctorInputs in;
  FillInputs(host, sources, &in);
  ASSERT_TRUE(in.processes[42].busy_cpus.has_value());
  EXPECT_NEAR(*in.processes[42].busy_cpus, 90.0 / 200, 1e-9);
  EXPECT_FALSE(in.processes[43].busy_cpus.has_value());
  // What ReadProcessStats reads: the planted /proc/<pid>/stat of each.
  dir.Write("proc/42/stat", stat(1, 2));
  std::map<int64_t, std::string> read = ReadProcessStats(host, sources.node_view);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[42], stat(1, 2));
}

// /proc/<pid>/stat is the process owner's to shape (its name): a name
// with ") R" and numbers in it does not shift the fields read; a FIFO in
// its place (a planted host tree) is not waited on, a link not followed,
// and an oversized file not read past its bound: no CPU time is judged.
TEST(GatherTest, AHostileProcStatIsNeitherMisreadNorWaitedOn) {
  testing::TempDir dir;
  HostFiles host(dir.path());
  node::NodeView view;
  view.gpus.resize(1);
  for (int64_t pid : {42, 43, 44, 45}) {
    node::ProcessView p;
    p.process.pid = pid;
    view.gpus[0].processes.push_back(p);
  }
  std::string spoof = "42 (x) R 1 9 9 999999) S 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5000 0 0\n";
  dir.Write("proc/42/stat", spoof);
  std::filesystem::create_directories(dir.path() + "/proc/43");
  ASSERT_EQ(::mkfifo((dir.path() + "/proc/43/stat").c_str(), 0644), 0);
  dir.Write("elsewhere", spoof);
  std::filesystem::create_directories(dir.path() + "/proc/44");
  std::filesystem::create_symlink(dir.path() + "/elsewhere", dir.path() + "/proc/44/stat");
  dir.Write("proc/45/stat", std::string(8192, '9'));
  std::map<int64_t, std::string> read = ReadProcessStats(host, view);
  EXPECT_EQ(read.count(43), 0u);
  EXPECT_EQ(read.count(44), 0u);
  std::optional<ProcStat> parsed = ParseProcStat(read[42]);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->cpu_ticks, 10);  // utime 7 + stime 3, after the real name's end.
  InputSources sources;
  sources.node_view = view;
  sources.stat_before = kStatBefore;
  sources.stat_after = kStatAfter;
  sources.process_stats_before = read;
  sources.process_stats_after = read;
  DoctorInputs in;
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.processes[42].busy_cpus.value_or(-1), 0);
  EXPECT_FALSE(in.processes[45].busy_cpus.has_value());
}

// A view whose backend could not read the GPUs (an agent waiting for the
// driver) is a GPU error, unless the caller names its own; one reading of
// /proc/stat is no window.
TEST(GatherTest, TheViewsBackendErrorIsTheGpuErrorAndOneStatIsNoWindow) {
  testing::TempDir dir;
  HostFiles host(dir.path());
  InputSources sources;
  sources.node_view.backend_error = "nvml: driver not loaded";
  sources.stat_after = kStatAfter;
  DoctorInputs in;
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.gpu_error, "nvml: driver not loaded");
  EXPECT_FALSE(in.cpu.has_value());
  EXPECT_FALSE(in.hostname.empty());  // This host's name when the view has none.
  sources.gpu_error = "cannot reach the agent";
  FillInputs(host, sources, &in);
  EXPECT_EQ(in.gpu_error, "cannot reach the agent");
}

}  // namespace
}  // namespace tarmac::doctor

namespace tarmac::doctor {
namespace {

// A ratio says what it was measured over: "the last hour" only when the
// history covers the hour, else how much of it there is.
TEST(GatherTest, ThrottleFromHistorySaysHowMuchHistoryItJudged) {
  constexpr int64_t kT0 = 1800000000;
  testing::TempDir dir;
  testing::FakeClock clock{std::chrono::system_clock::from_time_t(kT0)};
  Logger logger{LogLevel::kOff};
  store::StoreOptions o;
  o.path = dir.path() + "/tarmac.db";
  std::unique_ptr<store::StoreWriter> w = std::move(store::StoreWriter::Open(o, &clock, &logger)).value();
  for (int64_t t = kT0; t < kT0 + 99; ++t) {
    node::NodeView v;
    v.hostname = "node";
    v.taken_at = std::chrono::system_clock::from_time_t(t);
    node::GpuView g;
    g.info.uuid = "GPU-0";
    g.info.name = "NVIDIA H100 80GB HBM3";
    g.sample.utilization_gpu_ratio = 0.9;
    g.sample.clock_event_reasons = nvidia::kReasonHwThermalSlowdown;
    v.gpus.push_back(g);
    ASSERT_TRUE(w->WriteNow(v).ok());
  }
  ASSERT_TRUE(w->FoldAll().ok());
  std::unique_ptr<store::Db> db = std::move(store::Db::Open(o.path, store::Db::Mode::kReadOnly)).value();
  std::map<int, ThrottleWindow> throttle = ThrottleFromHistory(db.get(), kT0 + 100);
  ASSERT_EQ(throttle.count(0), 1u);
  EXPECT_EQ(throttle[0].seconds, 100);  // 99 readings, a second each (the last counts to the fold).
  EXPECT_EQ(throttle[0].source, "the 1m 40s of history in the last hour");
}

}  // namespace
}  // namespace tarmac::doctor
