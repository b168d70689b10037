// SPDX-License-Identifier: Apache-2.0
//
// A real agent for lease tests, with helpers: calls to its API, its lease
// events, `tarmac` commands against it and `tarmac run` children.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/proc_files.h"
#include "ipc/protocol.h"
#include "ipc/unix_server.h"
#include "testutil/agent_fixture.h"

namespace tarmac::testing {

class LeaseFixture : public AgentFixture {
 public:
  Child* StartLeaseAgent(const std::string& extra_config = "") {
    // The doctor's schedule is off: lease tests count events, and findings
    // about the test machine itself would be among them.
    std::string config =
        dir_.Write("agent.toml", "[sampler]\nfast_interval = \"200ms\"\n[leases]\nkill_grace = \"1s\"\n" +
                                     extra_config + "\n[doctor]\nenabled = false\n");
    return StartAgent({"--config", config});
  }

  nlohmann::json Call(const std::string& method, nlohmann::json params = nlohmann::json::object()) {
    ipc::Request r;
    r.method = method;
    r.params = std::move(params);
    Result<nlohmann::json> answer = ipc::CallAgent(Socket(), r, std::chrono::seconds(5));
    EXPECT_TRUE(answer.ok()) << method << ": " << answer.status().ToString();
    return answer.ok() ? answer.value() : nlohmann::json();
  }
  nlohmann::json Leases() { return Call("leases")["leases"]; }
  nlohmann::json Queue() { return Call("queue")["queue"]; }
  nlohmann::json Events() { return Call("events", {{"limit", 100000}})["events"]; }
  std::vector<std::string> EventKinds(int64_t lease) {
    std::vector<std::string> kinds;
    for (const nlohmann::json& e : Events()) {
      if (e["lease"] == lease) kinds.push_back(e["kind"].get<std::string>());
    }
    return kinds;
  }
  static bool Has(const std::vector<std::string>& kinds, const std::string& kind) {
    return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
  }

  std::string Uuid(int gpu) { return AgentStatus()["gpus"][gpu]["uuid"].get<std::string>(); }

  // `tarmac ARGS` against this agent (--socket goes after the command name,
  // before any `--`).
  RunResult T(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--socket", Socket()});
    return Tarmac(args);
  }

  Child* StartRun(const std::vector<std::string>& ask, const std::vector<std::string>& command,
                  const std::vector<std::string>& prefix = {}, const std::string& err = "run.err") {
    std::vector<std::string> argv = prefix;
    argv.push_back(BinDir() + "/tarmac");
    argv.push_back("run");
    argv.insert(argv.end(), ask.begin(), ask.end());
    argv.insert(argv.end(), {"--socket", Socket(), "--"});
    argv.insert(argv.end(), command.begin(), command.end());
    children_.push_back(std::make_unique<Child>(argv, Env(), dir_.path() + "/" + err));
    return children_.back().get();
  }

  static bool IsRunning(pid_t pid) {
    std::string stat;
    if (!ReadSmallFile("/proc/" + std::to_string(pid) + "/stat", &stat)) return false;
    size_t close = stat.rfind(')');
    return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] != 'Z';
  }
};

}  // namespace tarmac::testing
