// SPDX-License-Identifier: Apache-2.0
#include "backfill/batch_input.h"

#include <gtest/gtest.h>

namespace tarmac::backfill {
namespace {

using nlohmann::json;

TEST(BatchInputTest, ReadsOpenAiBatchLinesAsTheyAre) {
  std::string text =
      R"({"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"max_tokens":10}})"
      "\n\n"
      R"({"custom_id":"r2","method":"POST","url":"/api/generate","body":{"model":"llama3.2","prompt":"why"}})"
      "\r\n";
  Result<BatchInput> in = ParseBatchInput(text, "in.jsonl", {});
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in.value().model, "llama3.2");
  ASSERT_EQ(in.value().requests.size(), 2u);
  EXPECT_EQ(in.value().requests[0].custom_id, "r1");
  EXPECT_EQ(in.value().requests[0].url, "/v1/chat/completions");
  EXPECT_EQ(in.value().requests[0].body["max_tokens"], 10);
  EXPECT_EQ(in.value().requests[1].line, 3);
  EXPECT_EQ(in.value().requests[1].url, "/api/generate");
}

TEST(BatchInputTest, PromptLinesBecomeRequestsWithTheDefaultModelAndLineIds) {
  std::string text = R"({"prompt":"Say hi","options":{"temperature":0,"max_tokens":5}})"
                     "\n"
                     R"({"messages":[{"role":"user","content":"hello"}],"custom_id":"greet"})"
                     "\n";
  Result<BatchInput> in = ParseBatchInput(text, "p.jsonl", {"qwen2.5"});
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in.value().requests.size(), 2u);
  const BatchRequest& a = in.value().requests[0];
  EXPECT_EQ(a.custom_id, "line-1");
  EXPECT_EQ(a.url, "/v1/completions");
  EXPECT_EQ(a.body, json::parse(R"({"model":"qwen2.5","prompt":"Say hi","temperature":0,"max_tokens":5})"));
  EXPECT_EQ(in.value().requests[1].custom_id, "greet");
  EXPECT_EQ(in.value().requests[1].url, "/v1/chat/completions");
  EXPECT_EQ(in.value().model, "qwen2.5");
}

TEST(BatchInputTest, EveryBadLineIsReportedWithItsNumberAndNothingIsReturned) {
  std::string text = std::string(R"({"prompt":"ok","custom_id":"a","model":"m"})") + "\n" +  // 1: fine
                     "{not json\n" +                                                         // 2
                     R"({"prompt":"x","custom_id":"a","model":"m"})" + "\n" +                // 3: repeated id
                     R"({"prompt":"x","model":"other"})" + "\n" +  // 4: second model
                     R"({"custom_id":"b","method":"GET","url":"/v1/completions","body":{}})" + "\n" +  // 5
                     R"({"custom_id":"c","method":"POST","url":"/v1/embeddings","body":{"model":"m"}})" +
                     "\n" +                                      // 6
                     R"({"prompt":"x","messages":[]})" + "\n" +  // 7: both
                     R"({"prompt":"no model here"})" + "\n" +    // 8
                     R"([1,2])" + "\n" +                         // 9
                     R"({"prompt":"x","model":"m","custom_id":")" + std::string(65, 'x') + "\"}\n";  // 10
  Result<BatchInput> in = ParseBatchInput(text, "bad.jsonl", {});
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = in.status().message();
  for (const char* want :
       {"bad.jsonl:2: not valid JSON", "bad.jsonl:3: custom_id \"a\" appears twice",
        "bad.jsonl:4: model \"other\": the file is for \"m\" (line 1)",
        "bad.jsonl:5: method: expected \"POST\"", "bad.jsonl:6: url: expected",
        "bad.jsonl:7: expected \"prompt\" or \"messages\"", "bad.jsonl:8: no model",
        "bad.jsonl:9: expected a JSON object", "bad.jsonl:10: custom_id: expected 1 to 64"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << "\n" << m;
  }
  EXPECT_EQ(m.find("bad.jsonl:1:"), std::string::npos) << m;
}

// The same problem on every line is one line of output, with the count.
TEST(BatchInputTest, TheSameProblemOnManyLinesIsSaidOnce) {
  std::string text;
  for (int i = 1; i <= 20; ++i) text += R"({"prompt":"q","custom_id":"r)" + std::to_string(i) + "\"}\n";
  Result<BatchInput> in = ParseBatchInput(text, "b.jsonl", {});
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(
      in.status().message(),
      "b.jsonl:1: no model: name one in the line, or give one for the file (--model) (and 19 more lines the "
      "same)");
}

TEST(BatchInputTest, AnEmptyFileAndAFloodOfProblemsAreSaidBriefly) {
  Result<BatchInput> empty = ParseBatchInput("\n\n", "e.jsonl", {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "e.jsonl: no requests");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "nope\n";
  Result<BatchInput> same = ParseBatchInput(text, "f.jsonl", {});
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.status().message(), "f.jsonl:1: not valid JSON (and 99 more lines the same)");
  text.clear();
  for (int i = 0; i <= 100; ++i) text += R"({"prompt":"x","model":"m)" + std::to_string(i) + "\"}\n";
  Result<BatchInput> flood = ParseBatchInput(text, "f.jsonl", {});
  ASSERT_FALSE(flood.ok());
  EXPECT_NE(flood.status().message().find("f.jsonl: and 80 more problems"), std::string::npos)
      << flood.status().message();
}

}  // namespace
}  // namespace tarmac::backfill
