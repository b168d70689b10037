// SPDX-License-Identifier: Apache-2.0
//
// The one bounded client's room past a body: a body whose length the
// server says up front is taken at once, with the spare room a parser
// that reads past the text asks for, so that the body is not copied to be
// decoded (prom/vector_answer.h).
#include "http/bounded_fetch.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "testutil/http_stand_in.h"

namespace tarmac::http {
namespace {

TEST(BoundedFetchTest, ABodyOfASaidLengthKeepsTheSpareRoomAsked) {
  testing::HttpStandIn server;
  const std::string said(100000, 'a');
  server.server().Get("/said", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(said, "application/json");  // With its Content-Length.
  });
  server.Start();
  httplib::Client client(server.Url());
  for (size_t spare : {size_t{0}, size_t{64}, size_t{4096}}) {
    httplib::Request request;
    request.method = "GET";
    request.path = "/said";
    FetchLimits limits;
    limits.max_json_depth = 0;
    limits.what = "test";
    limits.spare_bytes = spare;
    Result<FetchedAnswer> answer = Fetch(&client, request, limits);
    ASSERT_TRUE(answer.ok()) << answer.status().message();
    EXPECT_EQ(answer.value().body, said);
    EXPECT_GE(answer.value().body.capacity(), said.size() + spare) << spare;
  }
}

}  // namespace
}  // namespace tarmac::http
