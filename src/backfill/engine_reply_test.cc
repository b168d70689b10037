// SPDX-License-Identifier: Apache-2.0
#include "backfill/engine_reply.h"

#include <gtest/gtest.h>

namespace tarmac::backfill {
namespace {

using nlohmann::json;
using Verdict = EngineReply::Verdict;

TEST(EngineReplyTest, AnOpenAiAnswerBecomesABatchOutputLine) {
  std::string body =
      R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",)"
      R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})";
  EngineReply r = ReadEngineReply("r1", "/v1/chat/completions", 200, body, "application/json");
  ASSERT_EQ(r.verdict, Verdict::kDone) << r.why;
  EXPECT_EQ(r.line["custom_id"], "r1");
  EXPECT_EQ(r.line["id"], "batch_req_r1");
  EXPECT_EQ(r.line["response"]["status_code"], 200);
  EXPECT_EQ(r.line["response"]["body"], json::parse(body));
  EXPECT_TRUE(r.line["error"].is_null());
  EXPECT_EQ(r.completion_tokens, 2);
}

TEST(EngineReplyTest, OllamaStreamsAreJoinedIntoTheUnstreamedAnswer) {
  std::string generate =
      "{\"model\":\"m\",\"response\":\"Hel\",\"done\":false}\n"
      "{\"model\":\"m\",\"response\":\"lo\",\"done\":false}\n"
      "{\"model\":\"m\",\"response\":\"\",\"done\":true,\"done_reason\":\"stop\",\"eval_count\":2}\n";
  EngineReply r = ReadEngineReply("g", "/api/generate", 200, generate, "application/x-ndjson");
  ASSERT_EQ(r.verdict, Verdict::kDone) << r.why;
  EXPECT_EQ(r.line["response"]["body"]["response"], "Hello");
  EXPECT_EQ(r.line["response"]["body"]["done_reason"], "stop");
  EXPECT_EQ(r.completion_tokens, 2);
  std::string chat =
      "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi \"},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"there\"},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true}\n";
  r = ReadEngineReply("c", "/api/chat", 200, chat, "application/x-ndjson");
  ASSERT_EQ(r.verdict, Verdict::kDone) << r.why;
  EXPECT_EQ(r.line["response"]["body"]["message"]["content"], "Hi there");
}

TEST(EngineReplyTest, OpenAiEventStreamsAreJoinedToo) {
  std::string sse =
      "data: "
      "{\"id\":\"c1\",\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
      "\"assistant\",\"content\":\"A\"},\"finish_reason\":null}]}\n\n"
      "data: "
      "{\"id\":\"c1\",\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B\"},"
      "\"finish_reason\":\"stop\"}]}\n\n"
      "data: "
      "{\"id\":\"c1\",\"created\":5,\"model\":\"m\",\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  EngineReply r = ReadEngineReply("s", "/v1/chat/completions", 200, sse, "text/event-stream");
  ASSERT_EQ(r.verdict, Verdict::kDone) << r.why;
  const json& body = r.line["response"]["body"];
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "AB");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.completion_tokens, 2);
}

TEST(EngineReplyTest, WhatToDoWhenTheEngineFails) {
  // Busy or broken: try again later; nothing is recorded.
  EXPECT_EQ(
      ReadEngineReply("a", "/api/generate", 503, R"({"error":"server busy"})", "application/json").verdict,
      Verdict::kRetry);
  EXPECT_EQ(ReadEngineReply("a", "/v1/completions", 500, "oops", "text/plain").verdict, Verdict::kRetry);
  EXPECT_EQ(ReadEngineReply("a", "/v1/completions", 429, "{}", "application/json").verdict, Verdict::kRetry);
  // A stream cut short, or an error line inside it (HTTP 200 all the same).
  EngineReply cut = ReadEngineReply("a", "/api/generate", 200, "{\"response\":\"x\",\"done\":false}\n",
                                    "application/x-ndjson");
  EXPECT_EQ(cut.verdict, Verdict::kRetry);
  EXPECT_NE(cut.why.find("before its last object"), std::string::npos) << cut.why;
  EngineReply mid =
      ReadEngineReply("a", "/api/chat", 200,
                      "{\"message\":{\"content\":\"x\"},\"done\":false}\n{\"error\":\"runner died\"}\n",
                      "application/x-ndjson");
  EXPECT_EQ(mid.verdict, Verdict::kRetry);
  EXPECT_NE(mid.why.find("runner died"), std::string::npos) << mid.why;
  EXPECT_EQ(
      ReadEngineReply("a", "/v1/completions", 200, "data: {\"choices\":[]}\n\n", "text/event-stream").verdict,
      Verdict::kRetry);
  // A bad request: that item fails, with the engine's message, and the batch goes on.
  EngineReply bad =
      ReadEngineReply("b", "/v1/chat/completions", 400,
                      R"({"error":{"message":"top_logprobs must be 0..20","type":"invalid_request_error"}})",
                      "application/json");
  ASSERT_EQ(bad.verdict, Verdict::kFailItem);
  EXPECT_EQ(bad.line["custom_id"], "b");
  EXPECT_TRUE(bad.line["response"].is_null());
  EXPECT_EQ(bad.line["error"]["code"], "http_400");
  EXPECT_EQ(bad.line["error"]["message"], "top_logprobs must be 0..20");
  // The model is not there: the whole batch stops, saying so.
  EngineReply missing = ReadEngineReply("c", "/api/generate", 404, R"({"error":"model 'llama9' not found"})",
                                        "application/json");
  EXPECT_EQ(missing.verdict, Verdict::kFailBatch);
  EXPECT_NE(missing.why.find("model 'llama9' not found"), std::string::npos);
}

// Found by fuzzing: a "done" that is not a boolean threw out of the reader.
TEST(EngineReplyTest, FieldsOfTheWrongTypeAreNotTakenForWhatTheyShouldBe) {
  EngineReply r =
      ReadEngineReply("a", "/api/generate", 200, "{\"response\":\"a\",\"done\":false}\n{\"done\":51614}\n",
                      "application/x-ndjson");
  EXPECT_EQ(r.verdict, Verdict::kRetry);
  r = ReadEngineReply("a", "/api/generate", 200, "{\"response\":\"a\",\"done\":\"yes\"}", "application/json");
  EXPECT_EQ(r.verdict, Verdict::kRetry);
  r = ReadEngineReply("a", "/v1/completions", 200,
                      "data: {\"id\":7,\"model\":[1],\"choices\":[{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n",
                      "text/event-stream");
  ASSERT_EQ(r.verdict, Verdict::kDone) << r.why;
  EXPECT_EQ(r.line["response"]["body"]["choices"][0]["text"], "x");
}

}  // namespace
}  // namespace tarmac::backfill
