// SPDX-License-Identifier: Apache-2.0
//
// Writes a synthetic lab history through the real write path (StoreWriter)
// and, side by side, the plain baseline: a CSV line per GPU and second with
// four metrics, appended and flushed each tick.
//
// Usage: store_week DB CSV DAYS
// Prints, at day 7 and at the end: the store's bytes per GPU-sample (all
// tables, tiers and indexes) and the CSV's, and the CPU time per tick of
// each writer.
//
// The lab: 8 GPUs at 1 s. GPU 0 trains around the clock (about 90 %),
// GPU 1 serves bursty inference, GPU 2 holds a 20 GiB notebook at 0 % for
// days, GPUs 3-7 run a few jobs a week and sit idle in between; about 40
// processes a week, with their users and commands.
#include <sys/stat.h>
#include <time.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/log.h"
#include "store/writer.h"

namespace {

using tarmac::node::GpuView;
using tarmac::node::NodeView;
using tarmac::node::ProcessView;

struct Job {
  int64_t start = 0;
  int64_t end = 0;
  int64_t pid = 0;
  std::string user;
  std::string command;
  enum class Pattern { kSteady, kBursty, kIdleHolding } pattern = Pattern::kSteady;
  int64_t memory_bytes = 0;
};

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int64_t FileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::vector<std::vector<Job>> Schedule(int64_t t0, int64_t seconds, std::mt19937* rng) {
  std::vector<std::vector<Job>> gpus(8);
  int64_t pid = 10000;
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(*rng); };
  const char* users[] = {"alice", "bob", "carol", "dave", "erin", "frank"};
  for (int g = 0; g < 8; ++g) {
    int64_t t = t0 + uniform(0, 3600);
    while (t < t0 + seconds) {
      Job j;
      j.pid = pid++;
      j.start = t;
      if (g == 0) {
        j.end = t + uniform(36, 60) * 3600;
        j.user = "alice";
        j.command = "python train.py --config llama-8b.yaml";
        j.memory_bytes = int64_t{70} << 30;
      } else if (g == 1) {
        j.end = t + uniform(8, 16) * 3600;
        j.user = "bob";
        j.command = "vllm serve meta-llama/Llama-3.1-8B";
        j.pattern = Job::Pattern::kBursty;
        j.memory_bytes = int64_t{60} << 30;
      } else if (g == 2) {
        j.end = t + uniform(48, 96) * 3600;
        j.user = "carol";
        j.command = "jupyter-kernel ipykernel_launcher -f kernel-7f3.json";
        j.pattern = Job::Pattern::kIdleHolding;
        j.memory_bytes = int64_t{20} << 30;
      } else {
        j.end = t + uniform(1, 6) * 3600;
        j.user = users[uniform(3, 5)];
        j.command = "python finetune.py --run " + std::to_string(j.pid);
        j.pattern = uniform(0, 4) == 0 ? Job::Pattern::kIdleHolding : Job::Pattern::kSteady;
        j.memory_bytes = uniform(4, 40) << 30;
      }
      gpus[static_cast<size_t>(g)].push_back(j);
      int64_t gap = g <= 2 ? uniform(60, 1800) : uniform(8, 40) * 3600;
      t = j.end + gap;
    }
  }
  return gpus;
}

NodeView Tick(int64_t t, const std::vector<std::vector<Job>>& jobs, std::vector<size_t>* next,
              std::mt19937* rng) {
  NodeView f;
  f.hostname = "lab";
  f.backend = "sim";
  f.taken_at = std::chrono::system_clock::from_time_t(t);
  for (int g = 0; g < 8; ++g) {
    const std::vector<Job>& list = jobs[static_cast<size_t>(g)];
    size_t& i = (*next)[static_cast<size_t>(g)];
    while (i < list.size() && list[i].end <= t) ++i;
    const Job* job = i < list.size() && list[i].start <= t ? &list[i] : nullptr;
    double util = 0;
    if (job != nullptr) {
      switch (job->pattern) {
        case Job::Pattern::kSteady:
          util = 0.85 + 0.1 * std::uniform_real_distribution<double>(0, 1)(*rng);
          break;
        case Job::Pattern::kBursty:
          util = (t / 45) % 3 == 0 ? 0.0 : 0.6 + 0.4 * ((t % 7) / 7.0);
          break;
        case Job::Pattern::kIdleHolding:
          util = 0;
          break;
      }
    }
    GpuView v;
    v.info.index = g;
    v.info.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(g);
    v.info.name = g < 4 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-80GB";
    v.sample.index = g;
    v.sample.utilization_gpu_ratio = static_cast<double>(static_cast<int>(util * 100)) / 100;
    v.sample.utilization_memory_ratio = util * 0.6;
    int64_t memory = job != nullptr ? job->memory_bytes : 0;
    v.sample.memory_used_bytes = memory;
    v.sample.power_milliwatts = 70000 + static_cast<int64_t>(util * 600000) + (t % 3) * 1000;
    v.sample.temperature_celsius = 32 + static_cast<int>(util * 40);
    v.sample.sm_clock_hertz = util > 0 ? int64_t{1980} * 1000000 : int64_t{345} * 1000000;
    v.sample.clock_event_reasons = util > 0 ? 0 : 1;
    if (job != nullptr) {
      ProcessView p;
      p.process.pid = job->pid;
      p.process.used_memory_bytes = memory;
      p.process.sm_utilization_ratio = v.sample.utilization_gpu_ratio;
      p.details.pid = job->pid;
      p.details.exists = true;
      p.details.user = job->user;
      p.details.uid = 1000;
      p.details.command = job->command;
      p.details.start_ticks = job->start;
      v.processes.push_back(p);
      v.sample.processes.push_back(p.process);
    }
    f.gpus.push_back(std::move(v));
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: store_week DB CSV DAYS\n");
    return 2;
  }
  std::string db = argv[1];
  std::string csv_path = argv[2];
  int64_t days = std::stoll(argv[3]);
  int64_t t0 = 1790000000 - 1790000000 % 86400;
  int64_t seconds = days * 86400;
  std::mt19937 rng(2026);
  std::vector<std::vector<Job>> jobs = Schedule(t0, seconds, &rng);
  size_t sessions_per_week = 0;
  for (const auto& g : jobs) {
    for (const Job& j : g) sessions_per_week += j.start < t0 + 7 * 86400 ? 1 : 0;
  }
  tarmac::Logger logger(tarmac::LogLevel::kWarning);
  tarmac::store::StoreOptions options;
  options.path = db;
  auto writer = tarmac::store::StoreWriter::Open(options, tarmac::RealClock(), &logger);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    return 1;
  }
  std::FILE* csv = std::fopen(csv_path.c_str(), "w");
  std::vector<size_t> next(8, 0);
  double store_cpu = 0;
  double csv_cpu = 0;
  std::printf("store_week: %lld days, 8 GPUs at 1 s, %zu processes in the first week\n",
              static_cast<long long>(days), sessions_per_week);
  for (int64_t t = t0; t < t0 + seconds; ++t) {
    NodeView f = Tick(t, jobs, &next, &rng);
    double a = CpuSeconds();
    tarmac::Status s = writer.value()->WriteNow(f);
    double b = CpuSeconds();
    for (const GpuView& g : f.gpus) {
      std::fprintf(csv, "%lld,%d,%.0f,%lld,%.1f,%.0f\n", static_cast<long long>(t), g.info.index,
                   *g.sample.utilization_gpu_ratio * 100,
                   static_cast<long long>(*g.sample.memory_used_bytes >> 20),
                   static_cast<double>(*g.sample.power_milliwatts) / 1000, *g.sample.temperature_celsius);
    }
    std::fflush(csv);
    double c = CpuSeconds();
    store_cpu += b - a;
    csv_cpu += c - b;
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    int64_t done = t - t0 + 1;
    if (done % (7 * 86400) == 0 || t + 1 == t0 + seconds) {
      (void)writer.value()->FoldAll();
      auto handle = tarmac::store::Db::Open(db, tarmac::store::Db::Mode::kReadWriteCreate);
      (void)handle.value()->Exec("PRAGMA wal_checkpoint(TRUNCATE)");
      double gpu_samples = static_cast<double>(done) * 8;
      std::printf(
          "day %3lld: store %.1f MiB = %.1f bytes per GPU-sample (raw kept 7 days); "
          "CSV %.1f MiB = %.1f bytes per GPU-sample (4 metrics)\n",
          static_cast<long long>(done / 86400), FileBytes(db) / 1048576.0,
          static_cast<double>(FileBytes(db) + FileBytes(db + "-wal")) / gpu_samples,
          FileBytes(csv_path) / 1048576.0, static_cast<double>(FileBytes(csv_path)) / gpu_samples);
      std::printf("         write CPU per tick: store %.1f us, CSV %.1f us\n",
                  store_cpu / static_cast<double>(done) * 1e6, csv_cpu / static_cast<double>(done) * 1e6);
      std::fflush(stdout);
    }
  }
  std::fclose(csv);
  return 0;
}
