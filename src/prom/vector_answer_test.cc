// SPDX-License-Identifier: Apache-2.0
//
// The streaming decoder of vector answers reads what the parse tree reads,
// and leaves every other answer to it.
#include "prom/vector_answer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tarmac::prom {
namespace {

// The parse tree's reading of `body` (an HTTP status other than 200 never
// takes the streaming path).
QueryResult Tree(const std::string& body) {
  Result<QueryResult> r = DecodeQueryAnswer(body, 299, "test");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : QueryResult();
}

TEST(VectorAnswerTest, ReadsWhatTheParseTreeReads) {
  for (
      const std::string body : {
          R"({"status":"success","data":{"resultType":"vector","result":[]}})",
          R"({"status":"success","warnings":["w1","w2"],"data":{"resultType":"vector","result":[
              {"metric":{"__name__":"up","instance":"a:1","job":"x"},"value":[1796000000.5,"1"]},
              {"metric":{},"value":[1796000000,"NaN"]},
              {"value":[1796000000,"+Inf"]},
              {"metric":{"q":"say \"hi\"\n","u":"\u00e9"},"value":[1,"-2.5e3"]}]}})",
          R"({"isPartial":true,"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1,"2"]}]}})",
          // Repeated keys: the last one counts, as in the parse tree.
          R"({"status":"error","status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1","a":"2"},"value":[1,"3"]}],"result":[]}})",
          R"({"status":"success","warnings":["old"],"warnings":"none","data":{"resultType":"matrix","resultType":"vector","result":[{"metric":{"a":"1"},"metric":{"b":"2"},"value":[1,"2"]}]}})",
          // A partial flag that is not JSON true, last; fields nobody reads.
          R"({"isPartial":true,"isPartial":1,"stats":{"timings":[1.5e3,null,false,"x"]},"status":"success","data":{"resultType":"vector","result":[{"metric":{"n":2,"a":"\ud83d\ude00"},"value":[1,"2"],"extra":{}}]}})",
      }) {
    std::optional<QueryResult> fast = DecodeVectorAnswer(body);
    ASSERT_TRUE(fast.has_value()) << body;
    QueryResult tree = Tree(body);
    ASSERT_EQ(fast->samples.size(), tree.samples.size()) << body;
    for (size_t i = 0; i < tree.samples.size(); ++i) {
      EXPECT_EQ(fast->samples[i].labels, tree.samples[i].labels) << body;
      EXPECT_EQ(fast->samples[i].timestamp_seconds, tree.samples[i].timestamp_seconds) << body;
      if (!std::isnan(tree.samples[i].value)) {
        EXPECT_EQ(fast->samples[i].value, tree.samples[i].value) << body;
      }
    }
    EXPECT_EQ(fast->warnings, tree.warnings) << body;
    EXPECT_EQ(fast->is_partial, tree.is_partial) << body;
  }
}

TEST(VectorAnswerTest, LeavesEveryOtherAnswerToTheParseTree) {
  for (
      const char* body : {
          R"({"status":"error","errorType":"bad_data","error":"parse error"})",
          R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})",
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}})",
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2",3]}]}})",
          R"({"status":"success","data":{"resultType":"vector","result":{}}})",
          R"({"status":"success","data":[]})",
          R"({"status":"success","data":{"resultType":"vector","result":[)",
          "not json",
          // A value that is neither a number nor a string: the parse tree's.
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,null]}]}})",
      }) {
    EXPECT_FALSE(DecodeVectorAnswer(body).has_value()) << body;
  }
}

// What the parse tree refuses the decoder refuses too: nothing may follow
// the answer, a value nobody reads is still read to its end, and text must
// be UTF-8 (no half of a surrogate pair).
TEST(VectorAnswerTest, RefusesWhatTheParseTreeRefuses) {
  for (
      const char* body : {
          R"({"status":"success","data":{"resultType":"vector","result":[]}} {})",
          R"({"status":"success","data":{"resultType":"vector","result":[]}}x)",
          R"({"stats":tru,"status":"success","data":{"resultType":"vector","result":[]}})",
          R"({"stats":[01],"status":"success","data":{"resultType":"vector","result":[]}})",
          R"({"stats":"\ud800","status":"success","data":{"resultType":"vector","result":[]}})",
          R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"\udc00"},"value":[1,"2"]}]}})",
          "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"a\":"
          "\"\xff\"},\"value\":[1,\"2\"]}]}}",
      }) {
    EXPECT_FALSE(DecodeVectorAnswer(body).has_value()) << body;
    EXPECT_FALSE(DecodeQueryAnswer(body, 200, "test").ok()) << body;
  }
}

}  // namespace
}  // namespace tarmac::prom
