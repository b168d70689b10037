// SPDX-License-Identifier: Apache-2.0
//
// One scheduling decision with 10,000 queued requests over 512 simulated
// GPUs (64 NVLink domains of 8), most of them leased (target: under 1 ms),
// against a baseline in the same run: the straightforward scheduler that
// tries to place every queued request in order (no quick rejection, no
// reservation).
#include <benchmark/benchmark.h>

#include <random>

#include "sched/schedule.h"

namespace tarmac::sched {
namespace {

using std::chrono::hours;
using TimePoint = std::chrono::steady_clock::time_point;
const TimePoint kNow = TimePoint{} + hours(1000);

struct Cluster {
  std::vector<GpuSlot> gpus;
  std::vector<RunningLease> leases;
  std::vector<QueuedRequest> queue;
  FairShare share;
};

// `free_gpus` of the 512 left unleased; the rest held by 8-GPU leases with
// ends spread over the next day.
Cluster MakeCluster(int free_gpus) {
  Cluster c;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 512; ++i) {
    GpuSlot g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.memory_free_bytes = int64_t{80} << 30;
    g.nvlink_domain = i / 8;
    g.pcie_switch = i / 2;
    g.numa_node = i / 4;
    c.gpus.push_back(g);
  }
  for (int i = free_gpus; i < 512; ++i) c.gpus[static_cast<size_t>(i)].is_leased = true;
  for (int start = free_gpus; start < 512; start += 8) {
    RunningLease l;
    for (int i = start; i < std::min(start + 8, 512); ++i) l.gpus.push_back(i);
    l.ends_at = kNow + std::chrono::minutes(rng() % (24 * 60));
    c.leases.push_back(l);
  }
  const int sizes[] = {1, 1, 1, 2, 4, 8};
  for (int id = 1; id <= 10000; ++id) {
    QueuedRequest r;
    r.id = id;
    r.sequence = id;
    r.uid = 1000 + static_cast<int64_t>(rng() % 100);
    r.wants.gpu_count = sizes[rng() % 6];
    r.priority = static_cast<Priority>(1 + rng() % 3);  // low, normal, high
    if (rng() % 2) r.max_time = std::chrono::minutes(10 + rng() % 600);
    c.queue.push_back(r);
  }
  for (int u = 0; u < 100; ++u) c.share.Charge(1000 + u, double(rng() % 100000), kNow - hours(rng() % 48));
  return c;
}

void BM_Schedule(benchmark::State& state) {
  Cluster c = MakeCluster(static_cast<int>(state.range(0)));
  size_t grants = 0;
  for (auto _ : state) {
    Decision d = Schedule(c.gpus, c.queue, c.leases, c.share, kNow);
    grants = d.grants.size();
    benchmark::DoNotOptimize(d);
  }
  state.counters["grants"] = static_cast<double>(grants);
}
BENCHMARK(BM_Schedule)->Arg(0)->Arg(16)->Arg(128)->Unit(benchmark::kMicrosecond);

// Baseline: order the queue the same way, then try to place every request.
void BM_NaivePlaceEveryRequest(benchmark::State& state) {
  Cluster c = MakeCluster(static_cast<int>(state.range(0)));
  size_t grants = 0;
  for (auto _ : state) {
    std::vector<GpuSlot> gpus = c.gpus;
    std::vector<const QueuedRequest*> order;
    for (const QueuedRequest& r : c.queue) order.push_back(&r);
    std::sort(order.begin(), order.end(), [&](const QueuedRequest* a, const QueuedRequest* b) {
      if (a->priority != b->priority) return a->priority > b->priority;
      double ua = c.share.Usage(a->uid, kNow), ub = c.share.Usage(b->uid, kNow);
      if (ua != ub) return ua < ub;
      return a->sequence < b->sequence;
    });
    grants = 0;
    for (const QueuedRequest* r : order) {
      if (std::optional<std::vector<int>> picked = PickGpus(gpus, r->wants)) {
        for (int i : *picked) gpus[static_cast<size_t>(i)].is_leased = true;
        grants++;
      }
    }
    benchmark::DoNotOptimize(gpus);
  }
  state.counters["grants"] = static_cast<double>(grants);
}
BENCHMARK(BM_NaivePlaceEveryRequest)->Arg(0)->Arg(16)->Arg(128)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tarmac::sched

BENCHMARK_MAIN();
