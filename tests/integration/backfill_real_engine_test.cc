// SPDX-License-Identifier: Apache-2.0
//
// Backfill against a real inference engine, when one is installed: Ollama
// (`ollama` on PATH and TARMAC_TEST_OLLAMA_MODEL naming a model it has
// pulled; the runner starts `ollama serve` in each lease), or any running
// OpenAI-compatible server (TARMAC_TEST_OPENAI_URL and
// TARMAC_TEST_OPENAI_MODEL). Skipped, saying what to set, otherwise. The
// GPUs are the simulated ones; the engine runs wherever it runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "testutil/lease_fixture.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

bool OnPath(const std::string& program) {
  return RunCommand({"sh", "-c", "command -v " + program}, {}).exit_code == 0;
}

class BackfillRealEngineTest : public LeaseFixture {
 public:
  void SetUp() override { UseScenarioText("[[gpu]]\ncount = 1\n"); }
  void TearDown() override {
    RunCommand({"pkill", "-KILL", "-f", "tarmac-backfill-runner --dir " + dir_.path()}, {}).exit_code;
  }

  // Runs a three-prompt batch and checks every answer is the engine's.
  void RunBatch(const std::string& model, const std::vector<std::string>& engine) {
    StartLeaseAgent("[backfill]\nidle_for = \"0s\"\n");
    std::string in =
        dir_.Write("in.jsonl", R"({"custom_id":"a","prompt":"Say yes.","options":{"max_tokens":8}}
{"custom_id":"b","messages":[{"role":"user","content":"Say no."}],"options":{"max_tokens":8}}
{"custom_id":"c","prompt":"Count to three.","options":{"max_tokens":8}}
)");
    std::vector<std::string> args = {"backfill", "submit", in, "--model", model, "--ready-timeout", "300"};
    args.insert(args.end(), engine.begin(), engine.end());
    args.insert(args.end(), {"--socket", Socket()});
    RunResult r = Tarmac(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(WaitFor(
        [&] {
          std::string state = Call("backfill.get", {{"id", 1}})["batch"].value("state", "");
          return state == "done" || state == "failed";
        },
        3000))
        << Call("backfill.get", {{"id", 1}}).dump();
    json b = Call("backfill.get", {{"id", 1}})["batch"];
    ASSERT_EQ(b["state"], "done") << b.dump();
    std::ifstream out(dir_.path() + "/in.results.jsonl");
    std::string line;
    int n = 0;
    while (std::getline(out, line)) {
      json j = json::parse(line);
      EXPECT_EQ(j["response"]["status_code"], 200) << line;
      EXPECT_FALSE(j["response"]["body"]["choices"][0].is_null()) << line;
      ++n;
    }
    EXPECT_EQ(n, 3);
  }
};

TEST_F(BackfillRealEngineTest, OllamaStartedInTheLeaseAnswersABatch) {
  std::string model = GetEnv("TARMAC_TEST_OLLAMA_MODEL");
  if (!OnPath("ollama") || model.empty()) {
    GTEST_SKIP()
        << "no real engine: install Ollama, pull a small model and set TARMAC_TEST_OLLAMA_MODEL to it "
           "(e.g. qwen2.5:0.5b) to run this test";
  }
  // Ollama's own models directory, shared with the server the runner starts.
  RunBatch(model, {"--engine", "openai", "--engine-command", "ollama serve"});
}

TEST_F(BackfillRealEngineTest, ARunningOpenAiCompatibleServerAnswersABatch) {
  std::string url = GetEnv("TARMAC_TEST_OPENAI_URL");
  std::string model = GetEnv("TARMAC_TEST_OPENAI_MODEL");
  if (url.empty() || model.empty()) {
    GTEST_SKIP() << "no real engine: set TARMAC_TEST_OPENAI_URL (e.g. http://127.0.0.1:8000 for vLLM or "
                    "llama.cpp's server) and TARMAC_TEST_OPENAI_MODEL to run this test";
  }
  RunBatch(model, {"--engine", "openai", "--url", url});
}

}  // namespace
}  // namespace tarmac::testing
