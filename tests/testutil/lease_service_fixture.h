// SPDX-License-Identifier: Apache-2.0
//
// What the lease service's unit tests share: a process table the test
// controls, a fleet of idle GPUs, and a fixture that makes a LeaseService
// over them with a fake clock and calls its API as a given user.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "leases/backfill_gate.h"
#include "leases/lease_service.h"
#include "testutil/fake_clock.h"
#include "testutil/testutil.h"

namespace tarmac::leases::test {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

inline constexpr int64_t kGiB = int64_t{1} << 30;

// A process table the test controls; records every signal that got through.
class FakeProcesses : public ProcessControl {
 public:
  std::map<int64_t, ProcessIdentity> table;
  std::vector<std::pair<int64_t, int>> signals;            // (pid, signal) delivered.
  std::map<std::string, std::set<int64_t>> lease_members;  // By lease token.

  std::optional<ProcessIdentity> Identify(int64_t pid) override {
    auto it = table.find(pid);
    if (it == table.end()) return std::nullopt;
    return it->second;
  }
  Status Signal(const sched::ProcessRef& ref, int64_t uid, int signal) override {
    std::optional<ProcessIdentity> now = Identify(ref.pid);
    if (!now || now->start_ticks != ref.start_ticks) return Status::NotFound("gone or reused");
    if (uid >= 0 && now->uid != uid) return Status::PermissionDenied("owner differs");
    signals.emplace_back(ref.pid, signal);
    return Status::OK();
  }
  std::vector<ProcessIdentity> LeaseProcesses(const std::string& token, int64_t uid, int64_t) override {
    std::vector<ProcessIdentity> out;
    for (int64_t pid : lease_members[token]) {
      if (table.count(pid) && table[pid].uid == uid) out.push_back(table[pid]);
    }
    return out;
  }
  void Add(int64_t pid, int64_t uid, int64_t start) { table[pid] = {pid, uid, start, 1, "python"}; }
};

// Events of `kind` in an answer to "events".
inline int CountKind(const nlohmann::json& events, const std::string& kind) {
  int n = 0;
  for (const nlohmann::json& e : events["result"]["events"]) n += e["kind"] == kind;
  return n;
}

// What backfill's gate sees at local time `minute_of_day` (a Sunday),
// with nothing waiting.
inline GateContext LocalAt(int minute_of_day) {
  GateContext c;
  c.minute_of_day = minute_of_day;
  c.hour_of_week = minute_of_day / 60;
  return c;
}

inline node::NodeView Machine(int gpus, std::vector<std::pair<int, node::ProcessView>> processes = {}) {
  node::NodeView f;
  for (int i = 0; i < gpus; ++i) {
    node::GpuView g;
    g.info.index = i;
    g.info.uuid = "GPU-" + std::to_string(i);
    g.sample.memory_free_bytes = 80 * kGiB;
    g.sample.utilization_gpu_ratio = 0;
    f.gpus.push_back(g);
  }
  for (auto& [gpu, p] : processes) f.gpus[static_cast<size_t>(gpu)].processes.push_back(p);
  return f;
}

class LeaseServiceTest : public ::testing::Test {
 public:
  std::unique_ptr<LeaseService> Make(LeasePolicy policy = {}, bool with_state = true) {
    std::unique_ptr<store::LeaseState> state;
    if (with_state) {
      Result<std::unique_ptr<store::LeaseState>> opened = store::LeaseState::Open(dir_.path() + "/leases.db");
      EXPECT_TRUE(opened.ok()) << opened.status().ToString();
      state = std::move(opened).value();
    }
    return std::make_unique<LeaseService>(policy, std::move(state), &processes_, &clock_, &logger_);
  }
  // `count` GPUs, each held by a backfill reservation of alice's (uid 1001,
  // her client pid 500) with `grace` to yield; bob's client (pid 501) and a
  // process of alice's (pid 600, started at tick 20) exist.
  std::unique_ptr<LeaseService> BackfilledGpus(int count, std::chrono::seconds grace) {
    LeasePolicy policy;
    policy.backfill.grace = grace;
    policy.backfill.is_auto = false;
    policy.backfill.idle_for = std::chrono::seconds(0);
    processes_.Add(500, 1001, 10);
    processes_.Add(501, 1002, 11);
    processes_.Add(600, 1001, 20);
    std::unique_ptr<LeaseService> s = Make(policy);
    s->OnTick(Machine(count), clock_.SteadyNow());
    for (int i = 0; i < count; ++i) {
      json b = Call(s.get(), "lease.request",
                    {{"gpus", 1}, {"priority", "backfill"}, {"kind", "reservation"}}, 1001, 500);
      EXPECT_EQ(b["result"]["state"], "granted") << b.dump();
    }
    return s;
  }

  json Call(LeaseService* s, const std::string& method, json params, uid_t uid = 1001, pid_t pid = 500) {
    ipc::Request r;
    r.method = method;
    r.params = std::move(params);
    json answer = json::parse(s->Handle(r, ipc::PeerCredentials{pid, uid, uid}));
    return answer;
  }

  testing::TempDir dir_;
  FakeProcesses processes_;
  testing::FakeClock clock_;
  Logger logger_{LogLevel::kOff};
};

}  // namespace tarmac::leases::test
