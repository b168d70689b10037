// SPDX-License-Identifier: Apache-2.0
#include "cli/web_command.h"

#include <gtest/gtest.h>

namespace tarmac::cli {
namespace {

using nlohmann::json;

TEST(WebCommandTest, LoopbackGetsTheTunnelLine) {
  json w = WebJson({{"url", "http://127.0.0.1:9477/"}, {"token_required", false}}, "gpu-node-7");
  EXPECT_EQ(w["url"], "http://127.0.0.1:9477/");
  EXPECT_EQ(w["local_url"], "http://127.0.0.1:9477/");
  EXPECT_EQ(w["tunnel"], "ssh -N -L 9477:127.0.0.1:9477 gpu-node-7");
  std::string text = RenderWeb({{"url", "http://127.0.0.1:9477/"}, {"token_required", false}}, "gpu-node-7");
  EXPECT_NE(
      text.find(
          "open a tunnel:\n  ssh -N -L 9477:127.0.0.1:9477 gpu-node-7\nthen open http://127.0.0.1:9477/"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("token"), std::string::npos) << text;
}

TEST(WebCommandTest, EveryAddressIsNamedByTheHostAndKeepsItsScheme) {
  json w = WebJson({{"url", "https://0.0.0.0:9477/"}, {"token_required", true}}, "gpu-node-7");
  EXPECT_EQ(w["url"], "https://gpu-node-7:9477/");
  EXPECT_EQ(w["local_url"], "https://127.0.0.1:9477/");
  EXPECT_TRUE(w["tunnel"].is_null());
  EXPECT_TRUE(w["token_required"].get<bool>());
  std::string text = RenderWeb({{"url", "https://0.0.0.0:9477/"}, {"token_required", true}}, "gpu-node-7");
  EXPECT_NE(text.find("The web console: https://gpu-node-7:9477/"), std::string::npos) << text;
  EXPECT_NE(text.find("Authorization: Bearer TOKEN"), std::string::npos) << text;
  json tls_loopback = WebJson({{"url", "https://127.0.0.1:9477/"}}, "n");
  EXPECT_EQ(tls_loopback["local_url"], "https://127.0.0.1:9477/");
  EXPECT_EQ(tls_loopback["tunnel"], "ssh -N -L 9477:127.0.0.1:9477 n");
}

TEST(WebCommandTest, AnAddressOfAnotherFormIsShownAsItIs) {
  for (const char* url : {"ftp://127.0.0.1:1/", "http://127.0.0.1:9477", "nonsense", ""}) {
    json w = WebJson({{"url", url}}, "n");
    EXPECT_EQ(w["url"], url);
    EXPECT_TRUE(w["tunnel"].is_null()) << url;
  }
}

}  // namespace
}  // namespace tarmac::cli
