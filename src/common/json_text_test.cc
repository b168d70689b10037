// SPDX-License-Identifier: Apache-2.0
#include "common/json_text.h"

#include <gtest/gtest.h>

namespace tarmac {
namespace {

using nlohmann::json;

TEST(JsonTextTest, AppendJsonWritesWhatDumpWrites) {
  for (json value : {json::parse(R"({"b": [1, 2.5, -3e-7, null, true], "a": {"x": "q\"\\\n\u00e9\u0001"}})"),
                     json(0.1), json(1.0), json("plain"), json::array(), json::object()}) {
    std::string out = "> ";
    AppendJson(&out, value);
    EXPECT_EQ(out, "> " + value.dump());
  }
}

TEST(JsonTextTest, AMemberAppendedByTheCallerTakesItsPlaceInDumpsOrder) {
  json object = {{"backend", "sim"}, {"host", "n\"1"}, {"version", 1}, {"g", 2}};
  for (std::string key : {"a", "gpus", "h", "host0", "z", "G", "\u00e9"}) {
    std::string out;
    AppendObjectWith(&out, object, key, [](std::string* text) { *text += "[1,{\"x\":2}]"; });
    json whole = object;
    whole[key] = json::parse("[1,{\"x\":2}]");
    EXPECT_EQ(out, whole.dump()) << key;
  }
  std::string alone;
  AppendObjectWith(&alone, json::object(), "gpus", [](std::string* text) { *text += "[]"; });
  EXPECT_EQ(alone, R"({"gpus":[]})");
}

}  // namespace
}  // namespace tarmac
